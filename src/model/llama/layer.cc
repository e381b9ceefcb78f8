// Llama-family decoder layer (Llama / SmolLM2, Qwen2 / Qwen2.5, Qwen3):
//
//   x += o_proj(attention(rope(q_norm?(q)), rope(k_norm?(k)), v))   of h = rms_norm(x)
//   x += down(act(gate(h)) · up(h))                                  of h = rms_norm(x)
//
// Qwen2 adds a bias to q/k/v (spec.attention_bias); Qwen3 normalizes q and k
// per head before RoPE (spec.qk_norm). Both come from the shared blocks.
#include "model/llama/llama.h"

namespace tessera::model::llama {

void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer) {
  const int x = b.value("x", s.hidden_size);
  const int h = b.value("h", s.hidden_size);
  const int o = b.value("o", s.hidden_size);
  build_rms_norm(b, s, x, h, "input_layernorm.weight", layer);
  build_attention(b, s, layer, h, o, static_cast<float>(s.attn_logit_softcap));
  b.add(OpKind::Add, {o}, {x}).layer = layer;
  build_rms_norm(b, s, x, h, "post_attention_layernorm.weight", layer);
  build_gated_mlp(b, s, layer, h, o);
  b.add(OpKind::Add, {o}, {x}).layer = layer;
}

}  // namespace tessera::model::llama

// Gemma 3 decoder layer: "sandwich" norms around both blocks, Gemma's
// (1 + w) RMSNorm form (spec.norm_weight_plus_one), per-head q/k norm, GELU-tanh
// MLP, and sliding-window local layers with their own RoPE base:
//
//   x += post_attention_norm(o_proj(attention(...)))     of h = input_norm(x)
//   x += post_feedforward_norm(down(gelu(gate(h)) · up(h)))  of h = pre_feedforward_norm(x)
//
// Embeddings are scaled by sqrt(hidden_size) and attention by
// query_pre_attn_scalar^-1/2 (both read from the spec by the shared blocks).
#include "model/gemma3/gemma3.h"

namespace tessera::model::gemma3 {

void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer) {
  const int x = b.value("x", s.hidden_size);
  const int h = b.value("h", s.hidden_size);
  const int o = b.value("o", s.hidden_size);
  build_rms_norm(b, s, x, h, "input_layernorm.weight", layer);
  // Gemma 3 configs may carry attn_logit_softcapping (a Gemma 2 leftover), but
  // transformers' Gemma3Attention never applies it (and neither does
  // llama.cpp): q/k norms took its place. Only the final logit softcap is used.
  build_attention(b, s, layer, h, o, 0.0f);
  build_rms_norm(b, s, o, o, "post_attention_layernorm.weight", layer);
  b.add(OpKind::Add, {o}, {x}).layer = layer;
  build_rms_norm(b, s, x, h, "pre_feedforward_layernorm.weight", layer);
  build_gated_mlp(b, s, layer, h, o);
  build_rms_norm(b, s, o, o, "post_feedforward_layernorm.weight", layer);
  b.add(OpKind::Add, {o}, {x}).layer = layer;
}

}  // namespace tessera::model::gemma3

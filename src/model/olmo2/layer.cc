// OLMo 2 decoder layer (Olmo2DecoderLayer): no norm before a block, one
// after it, and q / k normalized over the whole projection (all heads at
// once, weights as wide) before RoPE:
//
//   x += post_attention_norm(o_proj(attention(rope(q_norm(q)), rope(k_norm(k)), v)))   of x
//   x += post_feedforward_norm(down(silu(gate(x)) · up(x)))                           of x
#include "model/olmo2/olmo2.h"

namespace tessera::model::olmo2 {

void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer) {
  const int x = b.value("x", s.hidden_size);
  const int o = b.value("o", s.hidden_size);
  build_attention(b, s, layer, x, o, 0.0f, {.qk_norm_across_heads = true});
  build_rms_norm(b, s, o, o, "post_attention_layernorm.weight", layer);
  b.add(OpKind::Add, {o}, {x}).layer = layer;
  build_gated_mlp(b, s, layer, x, o);
  build_rms_norm(b, s, o, o, "post_feedforward_layernorm.weight", layer);
  b.add(OpKind::Add, {o}, {x}).layer = layer;
}

}  // namespace tessera::model::olmo2

// Qwen3.5 decoder layer (Qwen3_5DecoderLayer): gated delta-net linear
// attention or gated full attention, then a SwiGLU MLP, both pre-normed with
// Qwen's x̂·(1 + w) RMSNorm:
//
//   x += out_proj(norm_v(o) · silu(z))        (linear-attention layers), where
//        qkv = silu(conv1d(in_proj_qkv(h)))   causal depthwise conv, its tail in the state
//        o   = gated delta rule(qkv, a = in_proj_a(h), b = in_proj_b(h))  recurrent matrices in the state
//        z   = in_proj_z(h);  norm_v: RMSNorm per value head with a plain weight
//   x += o_proj(attention(...) · sigmoid(gate))  (full-attention layers: q_proj gives
//        [query | gate] per head; q/k norms; RoPE on the first quarter of each head)
//   x += down(silu(gate(h)) · up(h))
// of h = input_layernorm(x) and h = post_attention_layernorm(x).
#include "model/qwen3_5/qwen3_5.h"

#include <fmt/format.h>

namespace tessera::model::qwen3_5 {

void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer) {
  const int x = b.value("x", s.hidden_size);
  const int h = b.value("h", s.hidden_size);
  const int o = b.value("o", s.hidden_size);
  build_rms_norm(b, s, x, h, "input_layernorm.weight", layer);
  if (s.layer_types[layer] == LayerKind::LinearAttention) {
    const int64_t Hk = s.linear_num_key_heads, Hv = s.linear_num_value_heads;
    const int64_t dk = s.linear_key_head_dim, dv = s.linear_value_head_dim;
    const int64_t conv_dim = 2 * Hk * dk + Hv * dv;
    const int mixed = b.value("dn_mixed", conv_dim), conv = b.value("dn_conv", conv_dim);
    const int z = b.value("dn_z", Hv * dv), av = b.value("dn_a", Hv), bv = b.value("dn_b", Hv);
    const int core = b.value("dn_core", Hv * dv);
    auto linear = [&](int dst, const char* name) {
      b.add(OpKind::Linear, {h}, {dst}, {layer_weight(layer, fmt::format("linear_attn.{}.weight", name))}).layer =
          layer;
    };
    linear(mixed, "in_proj_qkv");
    linear(z, "in_proj_z");
    linear(bv, "in_proj_b");
    linear(av, "in_proj_a");
    Op& c = b.add(OpKind::CausalConv, {mixed}, {conv}, {layer_weight(layer, "linear_attn.conv1d.weight")});
    c.layer = layer;
    c.kernel = s.linear_conv_kernel;
    Op& rule = b.add(OpKind::DeltaRule, {conv, av, bv}, {core},
                     {layer_weight(layer, "linear_attn.A_log"), layer_weight(layer, "linear_attn.dt_bias")});
    rule.layer = layer;
    rule.heads = Hv;
    rule.kv_heads = Hk;
    rule.head_dim = dk;
    rule.value_dim = dv;
    // Qwen3_5RMSNormGated: a plain weight (not 1 + w), per value head, then · silu(z).
    Op& norm = b.add(OpKind::RmsNorm, {core}, {core}, {layer_weight(layer, "linear_attn.norm.weight")});
    norm.eps = static_cast<float>(s.norm_eps);
    norm.plus_one = false;
    norm.group = dv;
    norm.layer = layer;
    Op& gate = b.add(OpKind::GatedActivation, {z, core}, {core});
    gate.activation = Activation::SiLU;
    gate.layer = layer;
    b.add(OpKind::Linear, {core}, {o}, {layer_weight(layer, "linear_attn.out_proj.weight")}).layer = layer;
  } else {
    AttentionWeights names;
    names.output_gate = true;
    build_attention(b, s, layer, h, o, 0.0f, names);
  }
  b.add(OpKind::Add, {o}, {x}).layer = layer;
  build_rms_norm(b, s, x, h, "post_attention_layernorm.weight", layer);
  build_gated_mlp(b, s, layer, h, o);
  b.add(OpKind::Add, {o}, {x}).layer = layer;
}

}  // namespace tessera::model::qwen3_5

// Gemma 4 text decoder (Gemma4TextDecoderLayer, Gemma4TextModel):
//
//   x += post_attention_norm(o_proj(attention(...)))        of h = input_norm(x)
//   x += post_feedforward_norm(down(gelu(gate(h)) · up(h)))  of h = pre_feedforward_norm(x)
//   x += post_per_layer_input_norm(per_layer_projection(gelu(per_layer_input_gate(x)) · ple_l))
//   x *= layer_scalar
//
// Attention: q/k norms with plain weights (x̂·w), a weightless v norm, scale
// 1, sliding layers with 256-wide heads and full layers with their own
// (512-wide) heads and proportional RoPE; the last num_kv_shared_layers
// layers attend over the keys and values of the last earlier layer of their
// kind and have none of their own (program_builder.cc); the KV-sharing
// layers' MLPs may be twice as wide (layer_intermediate_size).
//
// Per-layer embeddings (ple, [rows][layers · P]), made once after the token
// embedding (build_per_layer_inputs):
//   ple = (rms_norm_P(per_layer_model_projection(x) / √hidden) + embed_tokens_per_layer(ids) · √P) / √2
// where x is the scaled token embedding and rms_norm_P normalizes each
// layer's P values; layer l reads columns [l·P, (l+1)·P).
#include <cmath>

#include "model/gemma3/gemma3.h"
#include "model/gemma4/gemma4.h"

namespace tessera::model::gemma4 {

void build_per_layer_inputs(ProgramBuilder& b, const ModelSpec& s) {
  const int64_t P = s.hidden_size_per_layer_input, width = s.num_layers * P;
  const int ids = b.value("ids", 1, ValueType::I32);
  const int x = b.value("x", s.hidden_size);
  const int ple = b.value("ple", width), tok = b.value("ple_tokens", width);
  Op& embed = b.add(OpKind::Embed, {ids}, {tok}, {"model.embed_tokens_per_layer.weight"});
  embed.scale = static_cast<float>(std::sqrt(static_cast<double>(P)));
  b.add(OpKind::Linear, {x}, {ple}, {"model.per_layer_model_projection.weight"});
  Op& scale = b.add(OpKind::Scale, {ple}, {ple});
  scale.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hidden_size)));
  Op& norm = b.add(OpKind::RmsNorm, {ple}, {ple}, {"model.per_layer_projection_norm.weight"});
  norm.eps = static_cast<float>(s.norm_eps);
  norm.plus_one = s.norm_weight_plus_one;
  norm.group = P;
  b.add(OpKind::Add, {tok}, {ple});
  Op& half = b.add(OpKind::Scale, {ple}, {ple});
  half.scale = static_cast<float>(std::pow(2.0, -0.5));
}

void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer) {
  // Gemma 3's sandwich-normed attention and MLP blocks (the spec's norm form,
  // head sizes and KV sharing make them Gemma 4's), then the per-layer input.
  gemma3::build_layer(b, s, layer);
  const int x = b.value("x", s.hidden_size);
  const int o = b.value("o", s.hidden_size);
  if (const int64_t P = s.hidden_size_per_layer_input; P > 0) {
    const int ple = b.value("ple", s.num_layers * P);
    const int g = b.value("ple_gate", P), mine = b.value("ple_layer", P);
    b.add(OpKind::Linear, {x}, {g}, {layer_weight(layer, "per_layer_input_gate.weight")}).layer = layer;
    Op& slice = b.add(OpKind::SliceCols, {ple}, {mine});
    slice.col_offset = layer * P;
    slice.layer = layer;
    Op& act = b.add(OpKind::GatedActivation, {g, mine}, {g});
    act.activation = s.activation;
    act.layer = layer;
    b.add(OpKind::Linear, {g}, {o}, {layer_weight(layer, "per_layer_projection.weight")}).layer = layer;
    build_rms_norm(b, s, o, o, "post_per_layer_input_norm.weight", layer);
    b.add(OpKind::Add, {o}, {x}).layer = layer;
  }
  Op& scalar = b.add(OpKind::Scale, {x}, {x}, {layer_weight(layer, "layer_scalar")});
  scalar.layer = layer;
}

}  // namespace tessera::model::gemma4

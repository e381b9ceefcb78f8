// LFM2 decoder layer (Lfm2DecoderLayer): a gated short convolution or a GQA
// attention block (q/k layer norms), then a SwiGLU MLP, both pre-normed:
//
//   x += out_proj(C · conv(B · x'))   of [B|C|x'] = in_proj(operator_norm(x))    (conv layers)
//   x += out_proj(attention(...))     of h = operator_norm(x)                    (attention layers)
//   x += w2(silu(w1(h)) · w3(h))      of h = ffn_norm(x)
//
// conv is a depthwise causal convolution of conv_L_cache taps over the
// sequence (ref::short_conv); its state is the last taps-1 inputs
// (state/conv_state.h). The final norm is model.embedding_norm.
#include "model/lfm2/lfm2.h"

namespace tessera::model::lfm2 {

void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer) {
  const int x = b.value("x", s.hidden_size);
  const int h = b.value("h", s.hidden_size);
  const int o = b.value("o", s.hidden_size);
  build_rms_norm(b, s, x, h, "operator_norm.weight", layer);
  if (s.layer_types[layer] == LayerKind::ShortConv) {
    const int bcx = b.value("conv_bcx", 3 * s.hidden_size);
    const int bx = b.value("conv_bx", s.hidden_size);
    const int y = b.value("conv_y", s.hidden_size);
    b.add(OpKind::Linear, {h}, {bcx}, {layer_weight(layer, "conv.in_proj.weight")}).layer = layer;
    Op& conv = b.add(OpKind::ShortConv, {bcx}, {bx, y}, {layer_weight(layer, "conv.conv.weight")});
    conv.layer = layer;
    conv.kernel = s.conv_kernel;
    b.add(OpKind::Linear, {y}, {o}, {layer_weight(layer, "conv.out_proj.weight")}).layer = layer;
  } else {
    AttentionWeights names;
    names.o = "self_attn.out_proj";
    names.q_norm = "self_attn.q_layernorm";
    names.k_norm = "self_attn.k_layernorm";
    build_attention(b, s, layer, h, o, 0.0f, names);
  }
  b.add(OpKind::Add, {o}, {x}).layer = layer;
  build_rms_norm(b, s, x, h, "ffn_norm.weight", layer);
  build_gated_mlp(b, s, layer, h, o, MlpWeights{"feed_forward.w1", "feed_forward.w3", "feed_forward.w2"});
  b.add(OpKind::Add, {o}, {x}).layer = layer;
}

}  // namespace tessera::model::lfm2

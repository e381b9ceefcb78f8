#include "core/model_spec.h"

namespace tessera {

int64_t layer_head_dim(const ModelSpec& s, int64_t layer) {
  const bool full = s.layer_types.at(static_cast<size_t>(layer)) == LayerKind::FullAttention;
  return full && s.global_head_dim > 0 ? s.global_head_dim : s.head_dim;
}

int64_t layer_num_kv_heads(const ModelSpec& s, int64_t layer) {
  const bool full = s.layer_types.at(static_cast<size_t>(layer)) == LayerKind::FullAttention;
  return full && s.global_num_kv_heads > 0 ? s.global_num_kv_heads : s.num_kv_heads;
}

bool layer_shares_kv(const ModelSpec& s, int64_t layer) {
  return s.num_kv_shared_layers > 0 && layer >= s.num_layers - s.num_kv_shared_layers && layer < s.num_layers;
}

int64_t layer_intermediate_size(const ModelSpec& s, int64_t layer) {
  return s.double_wide_mlp && layer_shares_kv(s, layer) ? 2 * s.intermediate_size : s.intermediate_size;
}

int64_t kv_source_layer(const ModelSpec& s, int64_t layer) {
  const LayerKind kind = s.layer_types.at(static_cast<size_t>(layer));
  if (!layer_shares_kv(s, layer)) return layer;
  for (int64_t j = s.num_layers - s.num_kv_shared_layers - 1; j >= 0; --j)
    if (s.layer_types[static_cast<size_t>(j)] == kind) return j;
  return -1;
}

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::FullAttention: return "full_attention";
    case LayerKind::SlidingAttention: return "sliding_attention";
    case LayerKind::LinearAttention: return "linear_attention";
    case LayerKind::ShortConv: return "conv";
  }
  return "?";
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::SiLU: return "silu";
    case Activation::GeluTanh: return "gelu_pytorch_tanh";
    case Activation::Gelu: return "gelu";
    case Activation::Sigmoid: return "sigmoid";
  }
  return "?";
}

}  // namespace tessera

#include "model/llama/llama.h"

#include <cstring>

namespace tessera::model::llama {

std::vector<int64_t> unpermuted_order(int64_t rows, int64_t heads) {
  const int64_t d = rows / heads, half = d / 2;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t i = 0; i < half; ++i) order[h * d + s * half + i] = h * d + 2 * i + s;
  return order;
}

namespace {

// The heads whose rows llama.cpp permuted in tensor g (0: none).
int64_t permuted_heads(const ModelSpec& s, const std::string& g) {
  if (g.find(".attn_q.") != std::string::npos) return s.num_heads;
  if (g.find(".attn_k.") != std::string::npos) return s.num_kv_heads;
  return 0;
}

void restore(const ModelSpec& s, const std::string& g, F32Tensor& t, const std::string&) {
  if (const int64_t heads = permuted_heads(s, g)) reorder_rows(t, unpermuted_order(t.shape[0], heads));
}

std::optional<std::vector<int64_t>> stored_rows(const ModelSpec& s, const std::string& g, const TensorView& v) {
  if (const int64_t heads = permuted_heads(s, g); heads && v.shape.size() == 2)
    return unpermuted_order(static_cast<int64_t>(v.shape[0]), heads);
  return std::vector<int64_t>{};
}

}  // namespace

const ArchitectureUnit unit = {
    .name = "llama",
    .hf_model_type = "llama",
    .read_hf_config = read_hf_config,
    .gguf_architecture = "llama",
    .read_gguf = read_gguf,
    .gguf_tensors = {.restore = restore, .stored_rows = stored_rows},
    .build_layer = build_layer,
};

}  // namespace tessera::model::llama

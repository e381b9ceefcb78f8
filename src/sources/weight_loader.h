// The weights of a model as f32 tensors under their Hugging Face parameter
// names ("model.layers.0.self_attn.q_proj.weight"), whatever the source:
//
//   * HF checkpoints: f32 / f16 / bf16 safetensors, converted exactly; the
//     text model of a multimodal checkpoint ("model.language_model.*") is
//     found under the plain names.
//   * GGUF: llama.cpp tensor names mapped back to HF names, every ggml block
//     format dequantized (ggml_dequant.h), and the storage changes llama.cpp's
//     converter makes undone, as transformers' GGUF loader does. Both are an
//     architecture's GgufTensorRules (its src/model/<arch>/ folder), e.g.
//     llama's attn_q / attn_k rows permuted per head for interleaved RoPE,
//     Gemma 3's norms stored as 1 + w, Qwen 3.5's reordered value heads.
//     Depthwise convolution taps are squeezed to [channels][taps].
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sources/model_source.h"

namespace tessera {

struct F32Tensor {
  std::vector<int64_t> shape;  // outermost first
  std::vector<float> data;
  int64_t elements() const;
};

using F32Weights = std::map<std::string, F32Tensor>;

// How one architecture's tensors are named and stored in llama.cpp's GGUF files.
struct GgufTensorRules {
  // HF name -> GGUF name, tried before the names every architecture shares
  // (token_embd, output_norm, output and the Llama-style blk.N.* names):
  // whole names (model.*, lm_head.*) ...
  std::vector<std::pair<std::string, std::string>> names{};
  // ... and layer parameters: the suffix after "model.layers.N." -> the
  // suffix after "blk.N.".
  std::vector<std::pair<std::string, std::string>> layer_names{};
  // Undoes, in place, what the converter changed in GGUF tensor `gguf_name`
  // after it was dequantized (`origin` names the file in errors). nullptr:
  // every tensor is stored as the HF weight.
  void (*restore)(const ModelSpec& s, const std::string& gguf_name, F32Tensor& t, const std::string& origin) = nullptr;
  // Whether the stored tensor `v` holds the HF weight's values in whole rows,
  // and in which order: the GGUF row behind each HF row (empty: the same
  // order), or nullopt when they are not whole rows (values changed, columns
  // reordered), so only `restore` can recover them. nullptr: stored as is.
  std::optional<std::vector<int64_t>> (*stored_rows)(const ModelSpec& s, const std::string& gguf_name,
                                                     const TensorView& v) = nullptr;
};

// The GGUF tensor name llama.cpp uses for HF parameter name `hf_name` under
// `rules` ("" when there is none).
std::string gguf_tensor_name(const GgufTensorRules& rules, const std::string& hf_name);

// Helpers for the rules of several architectures.
bool ends_with(std::string_view s, std::string_view suffix);
// Norm weights stored as 1 + w (Gemma): (1 + w) - 1 is exact for stored
// values in [0.5, 2] (Sterbenz), so adding the 1 back in the model restores
// the stored value exactly.
void subtract_one(F32Tensor& t);
// t's rows (first dimension) in the order `source` gives: row r is old row source[r].
void reorder_rows(F32Tensor& t, const std::vector<int64_t>& source);

// Loads `names` (HF names) from `src`. Throws Error naming the first tensor
// that is missing or has a format that cannot be converted. `progress`, if
// set, is called with (done, total) after each tensor.
F32Weights load_f32_weights(const ModelSource& src, const std::vector<std::string>& names,
                             const std::function<void(size_t, size_t)>& progress = {});

// The tensor a GGUF stores for HF name `name`, as it is stored (rows in
// GGUF order), and the GGUF row behind each HF row (empty: the same order).
// Only row reorders apply (llama's attn_q / attn_k row permutation, Qwen3.5's
// value-head reorder), so the stored values are the HF weight's values.
// nullopt for other sources, and for tensors whose stored values are not whole
// HF rows (Qwen3.5's ssm_out columns, norms stored as 1 + w, ssm_a), which
// only load_f32_weights restores; throws Error when the tensor is missing.
struct GgufStoredTensor {
  const TensorView* view = nullptr;
  std::vector<int64_t> row_source;
};
std::optional<GgufStoredTensor> gguf_stored_tensor(const ModelSource& src, const std::string& name);


}  // namespace tessera

// The weights of a model as f32 tensors under their Hugging Face parameter
// names ("model.layers.0.self_attn.q_proj.weight"), whatever the source:
//
//   * HF checkpoints: f32 / f16 / bf16 safetensors, converted exactly; the
//     text model of a multimodal checkpoint ("model.language_model.*") is
//     found under the plain names.
//   * GGUF: llama.cpp tensor names mapped back to HF names, every ggml block
//     format dequantized (ggml_dequant.h), and the two storage changes
//     llama.cpp's converter makes undone, as transformers' GGUF loader does:
//       - llama: attn_q / attn_k rows were permuted per head for interleaved
//         RoPE: HF row h·d + s·d/2 + i is GGUF row h·d + 2i + s;
//       - gemma3: every *norm.weight is stored as 1 + w;
//       - qwen35: every *norm.weight but the delta-net's ssm_norm is stored as
//         1 + w; A_log is stored as ssm_a = -exp(A_log); the value heads of the
//         delta-net tensors are reordered from grouped by key head to tiled
//         (weight_loader.cc, v_head_layout); conv1d taps squeezed to [channels][taps].
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sources/model_source.h"

namespace tessera {

struct F32Tensor {
  std::vector<int64_t> shape;  // outermost first
  std::vector<float> data;
  int64_t elements() const;
};

using F32Weights = std::map<std::string, F32Tensor>;

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

// The GGUF tensor name llama.cpp uses for an HF parameter name of a model of
// `arch` ("" when there is none).
std::string gguf_tensor_name(Architecture arch, const std::string& hf_name);

}  // namespace tessera

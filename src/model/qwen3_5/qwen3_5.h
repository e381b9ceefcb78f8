// Qwen 3.5: gated delta-net and gated full-attention layers.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::qwen3_5 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);
void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

// llama.cpp's storage of the gated delta-net tensors (tensors.cc).
void restore_tensor(const ModelSpec& s, const std::string& gguf_name, F32Tensor& t, const std::string& origin);
std::optional<std::vector<int64_t>> stored_rows(const ModelSpec& s, const std::string& gguf_name,
                                                const TensorView& v);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::qwen3_5

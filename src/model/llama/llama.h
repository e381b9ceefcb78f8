// Llama (SmolLM2, Llama 2 / 3): pre-norm attention and gated MLP.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::llama {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);
void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

// GGUF llama attn_q / attn_k rows, permuted per head for interleaved RoPE by
// llama.cpp's converter: HF row h·d + s·d/2 + i is GGUF row h·d + 2i + s.
std::vector<int64_t> unpermuted_order(int64_t rows, int64_t heads);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::llama

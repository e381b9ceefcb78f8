// Gemma 4: per-kind head sizes, KV sharing, per-layer embeddings.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::gemma4 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);
void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

// Gemma 4's per-layer embeddings ("ple"), after the token embedding.
void build_per_layer_inputs(ProgramBuilder& b, const ModelSpec& s);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::gemma4

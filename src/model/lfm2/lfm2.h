// LFM2: gated short-convolution and attention layers.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::lfm2 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);
void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::lfm2

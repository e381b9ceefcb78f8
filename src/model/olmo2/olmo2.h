// OLMo 2: norms after each block instead of before, and q / k norms over all
// heads at once.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include "model/architecture.h"

namespace tessera::model::olmo2 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);
void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::olmo2

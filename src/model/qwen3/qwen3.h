// Qwen3: Llama's layer with per-head q/k norms.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::qwen3 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::qwen3

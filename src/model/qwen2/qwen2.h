// Qwen2 / Qwen2.5: Llama's layer with q/k/v biases and Qwen's sliding layers.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::qwen2 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);

extern const ArchitectureUnit unit;

}  // namespace tessera::model::qwen2

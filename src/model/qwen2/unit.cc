#include "model/qwen2/qwen2.h"

#include "model/llama/llama.h"

namespace tessera::model::qwen2 {

// llama.cpp stores its tensors under the shared names, as the HF weights.
const ArchitectureUnit unit = {
    .name = "qwen2",
    .hf_model_type = "qwen2",
    .read_hf_config = read_hf_config,
    .gguf_architecture = "qwen2",
    .read_gguf = read_gguf,
    .build_layer = llama::build_layer,
};

}  // namespace tessera::model::qwen2

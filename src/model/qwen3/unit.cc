#include "model/qwen3/qwen3.h"

#include "model/llama/llama.h"

namespace tessera::model::qwen3 {

// llama.cpp stores its tensors under the shared names, as the HF weights.
const ArchitectureUnit unit = {
    .name = "qwen3",
    .hf_model_type = "qwen3",
    .read_hf_config = read_hf_config,
    .gguf_architecture = "qwen3",
    .read_gguf = read_gguf,
    .build_layer = llama::build_layer,
};

}  // namespace tessera::model::qwen3

#include "model/olmo2/olmo2.h"

namespace tessera::model::olmo2 {

// llama.cpp stores the weights as they are (no q / k row permutation); the
// norm after attention is its post_attention_norm.
const ArchitectureUnit unit = {
    .name = "olmo2",
    .hf_model_type = "olmo2",
    .read_hf_config = read_hf_config,
    .gguf_architecture = "olmo2",
    .read_gguf = read_gguf,
    .gguf_tensors = {.layer_names = {{"post_attention_layernorm.weight", "post_attention_norm.weight"}}},
    .build_layer = build_layer,
    .layer_kinds = {LayerKind::FullAttention},
};

}  // namespace tessera::model::olmo2

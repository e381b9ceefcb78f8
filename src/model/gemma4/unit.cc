#include "model/gemma4/gemma4.h"

namespace tessera::model::gemma4 {

namespace {

void after_embedding(ProgramBuilder& b, const ModelSpec& s) {
  if (s.hidden_size_per_layer_input > 0) build_per_layer_inputs(b, s);
}

}  // namespace

// Norms are stored as the HF weights (x̂·w); the per-layer embeddings and the
// per-layer input block have names of their own.
const ArchitectureUnit unit = {
    .name = "gemma4",
    .hf_model_type = "gemma4_text",
    .read_hf_config = read_hf_config,
    .hf_wrapper = ArchitectureUnit::HfWrapper{"gemma4", "Gemma4ForConditionalGeneration", true},
    .gguf_architecture = "gemma4",
    .read_gguf = read_gguf,
    .gguf_tensors = {.names = {{"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
                               {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
                               {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"}},
                     .layer_names = {{"post_attention_layernorm.weight", "post_attention_norm.weight"},
                                     {"per_layer_input_gate.weight", "inp_gate.weight"},
                                     {"per_layer_projection.weight", "proj.weight"},
                                     {"post_per_layer_input_norm.weight", "post_norm.weight"},
                                     {"layer_scalar", "layer_output_scale.weight"}}},
    .build_layer = build_layer,
    .build_after_embedding = after_embedding,
};

}  // namespace tessera::model::gemma4

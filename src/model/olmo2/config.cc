// OLMo 2: its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/olmo2/olmo2.h"

namespace tessera::model::olmo2 {

using namespace tessera::hf;

// Olmo2Config (transformers 5.x configuration_olmo2.py): Llama's fields with
// OLMo's defaults; head_dim is not declared (getattr(config, "head_dim",
// hidden // heads)); RoPE through the generic rope_parameters.
ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "Olmo2ForCausalLM", 50304, 4096, 11008, 32, 32, std::nullopt, true, ClassDefaults::HeadDim::Extra, 0,
      2048, "rms_norm_eps", 1e-5, "hidden_act", "silu", std::nullopt, 50279, false, false};
  ModelSpec s;
  s.arch = unit.name;
  read_common(r, d, s);
  // attention_bias puts a bias on o_proj too, which ModelSpec cannot express.
  if (r.boolean("attention_bias", false)) r.error("attention_bias", "true is not supported (o_proj would have a bias)");
  s.qk_norm = true;
  s.layer_types.assign(static_cast<size_t>(s.num_layers), LayerKind::FullAttention);
  read_generic_rope(r, s, 10000.0, std::nullopt, /*class_has_layer_types=*/false);
  return s;
}

// llama.cpp's olmo2 (convert_hf_to_gguf.py's Olmo2Model): the shared keys; a
// sliding window marks OLMo 3, whose sliding layers this unit does not build.
ModelSpec read_gguf(const GgufMetadataReader& r) {
  ModelSpec spec = read_shared_gguf_spec(r);
  spec.qk_norm = true;
  return spec;
}

}  // namespace tessera::model::olmo2

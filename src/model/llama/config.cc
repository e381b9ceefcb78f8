// Llama (SmolLM2, Llama 2 / 3): its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/llama/llama.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tessera::model::llama {

using namespace tessera::hf;
using nlohmann::json;

ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "LlamaForCausalLM", 32000, 4096, 11008, 32, 32, std::nullopt, true, ClassDefaults::HeadDim::NullableField, 0,
      2048, "rms_norm_eps", 1e-6, "hidden_act", "silu", 1, 2, false, true};
  ModelSpec s;
  s.arch = unit.name;
  read_common(r, d, s);
  if (r.boolean("mlp_bias", false)) r.error("mlp_bias", "true is not supported (ModelSpec has no MLP biases)");
  s.attention_bias = r.boolean("attention_bias", false);
  s.layer_types.assign(static_cast<size_t>(s.num_layers), LayerKind::FullAttention);
  read_generic_rope(r, s, 10000.0, std::nullopt, /*class_has_layer_types=*/false);
  return s;
}

ModelSpec read_gguf(const GgufMetadataReader& r) { return read_shared_gguf_spec(r); }

}  // namespace tessera::model::llama

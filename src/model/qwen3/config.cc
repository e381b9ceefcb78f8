// Qwen3: its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/qwen3/qwen3.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tessera::model::qwen3 {

using namespace tessera::hf;
using nlohmann::json;

ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "Qwen3ForCausalLM", 151936, 4096, 22016, 32, 32, 32, true, ClassDefaults::HeadDim::Field, 128,
      32768, "rms_norm_eps", 1e-6, "hidden_act", "silu", std::nullopt, std::nullopt, false, false};
  ModelSpec s;
  s.arch = unit.name;
  read_common(r, d, s);
  s.qk_norm = true;
  s.attention_bias = r.boolean("attention_bias", false);
  read_qwen_layers(r, s);
  read_generic_rope(r, s, 10000.0, std::nullopt);
  return s;
}

ModelSpec read_gguf(const GgufMetadataReader& r) {
  ModelSpec spec = read_shared_gguf_spec(r);
  spec.qk_norm = true;
  return spec;
}

}  // namespace tessera::model::qwen3

// LFM2: its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/lfm2/lfm2.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tessera::model::lfm2 {

using namespace tessera::hf;
using nlohmann::json;

// LFM2: gated short-convolution blocks ("conv") and GQA attention blocks with
// q/k layer norms. The feed-forward width is adjusted as in Lfm2MLP:
//   ff = int(2·ff/3); ff = int(multiplier·ff); ff = multiple_of·ceil(ff/multiple_of).
ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "Lfm2ForCausalLM", 65536, 2560, 12288, 32, 32, 8, false, ClassDefaults::HeadDim::Extra, 0,
      128000, "norm_eps", 1e-5, nullptr, "silu", 1, 2, true, false};
  ModelSpec s;
  s.arch = unit.name;
  read_common(r, d, s);
  s.qk_norm = true;
  // Legacy spellings that override the standard names (Lfm2Config.__post_init__).
  if (r.present("block_ff_dim")) s.intermediate_size = r.size("block_ff_dim", 0);
  if (r.present("tie_embedding")) s.tie_word_embeddings = r.boolean("tie_embedding", true);
  if (r.boolean("conv_bias", false)) r.error("conv_bias", "true is not supported (ModelSpec has no conv biases)");
  s.conv_kernel = r.size("conv_L_cache", 3);

  // block_ffn_dim_multiplier is declared float | int: null is rejected like any other non-number.
  const double mult = r.number("block_ffn_dim_multiplier", 1.0);
  const int64_t multiple_of = r.size("block_multiple_of", 256);
  if (r.boolean("block_auto_adjust_ff_dim", true)) {
    int64_t ff = static_cast<int64_t>(2.0 * static_cast<double>(s.intermediate_size) / 3.0);
    const double scaled = mult * static_cast<double>(ff);
    if (!(scaled >= 0) || scaled > static_cast<double>(kMaxSize))
      r.error("block_ffn_dim_multiplier", "gives a feed-forward width of {}", scaled);
    ff = static_cast<int64_t>(scaled);
    ff = multiple_of * ((ff + multiple_of - 1) / multiple_of);
    if (ff <= 0 || ff > kMaxSize) r.error("intermediate_size", "adjusted feed-forward width {} is out of range", ff);
    s.intermediate_size = ff;
  }

  const std::map<std::string, LayerKind> allowed = {{"full_attention", LayerKind::FullAttention},
                                                    {"conv", LayerKind::ShortConv}};
  if (auto lt = read_layer_types(r, s.num_layers, allowed)) {
    s.layer_types = std::move(*lt);
  } else {
    std::set<int64_t> full;
    const json* idxs = r.find("full_attn_idxs");
    if (idxs == nullptr || idxs->is_null()) {
      for (int64_t i = 0; i < s.num_layers; ++i) full.insert(i);
    } else {
      if (!idxs->is_array()) r.error("full_attn_idxs", "must be a list of layer indices, got {}", shown(*idxs));
      for (const json& e : *idxs) full.insert(r.as_integer("full_attn_idxs", e));
    }
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layer_types.push_back(full.count(i) ? LayerKind::FullAttention : LayerKind::ShortConv);
  }
  read_generic_rope(r, s, 1000000.0, std::nullopt);
  return s;
}

ModelSpec read_gguf(const GgufMetadataReader& r) {
  GgufCommon c = read_gguf_common(r, {.layers_without_attention = true, .sliding_window = true});
  ModelSpec& spec = c.spec;
  const int64_t L = spec.num_layers;
  const std::vector<int64_t>& kv = c.kv_heads;
  spec.qk_norm = true;
  spec.conv_kernel = r.req_int("shortconv.l_cache", 1, 1 << 16);
  for (int64_t i = 0; i < L; ++i) {
    LayerKind& k = spec.layer_types[static_cast<size_t>(i)];
    if (kv[static_cast<size_t>(i)] == 0) k = LayerKind::ShortConv;
    else if (spec.sliding_window > 0) k = LayerKind::SlidingAttention;
  }
  finish_gguf_spec(r, spec);
  return spec;
}

}  // namespace tessera::model::lfm2

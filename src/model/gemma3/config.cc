// Gemma 3: its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/gemma3/gemma3.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tessera::model::gemma3 {

using namespace tessera::hf;
using nlohmann::json;

// Gemma 3: RMSNorm x̂·(1 + w), embeddings × √hidden_size, q/k norms, attention
// scale query_pre_attn_scalar^-½, five sliding layers per full one by default, and
// separate RoPE for sliding layers (rope_local_base_freq, 10k) and full layers (1M,
// possibly linearly scaled).
ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "Gemma3ForCausalLM", 262208, 2304, 9216, 26, 8, 4, false, ClassDefaults::HeadDim::Field, 256,
      131072, "rms_norm_eps", 1e-6, "hidden_activation", "gelu_pytorch_tanh", 2, 1, true, true};
  ModelSpec s;
  s.arch = unit.name;
  read_common(r, d, s);
  s.qk_norm = true;
  s.norm_weight_plus_one = true;
  s.scale_embeddings = true;
  s.attention_bias = r.boolean("attention_bias", false);
  s.query_pre_attn_scalar = static_cast<double>(r.size("query_pre_attn_scalar", 256));
  s.attn_logit_softcap = r.nullable_number("attn_logit_softcapping", std::nullopt).value_or(0.0);
  s.final_logit_softcap = r.nullable_number("final_logit_softcapping", std::nullopt).value_or(0.0);
  if (s.attn_logit_softcap < 0) r.error("attn_logit_softcapping", "must not be negative");
  if (s.final_logit_softcap < 0) r.error("final_logit_softcapping", "must not be negative");
  if (r.present_non_null("use_bidirectional_attention") && r.boolean("use_bidirectional_attention", false))
    r.error("use_bidirectional_attention", "true is not supported (decoder attention is causal)");

  const std::map<std::string, LayerKind> allowed = {{"full_attention", LayerKind::FullAttention},
                                                    {"sliding_attention", LayerKind::SlidingAttention}};
  if (auto lt = read_layer_types(r, s.num_layers, allowed)) {
    s.layer_types = std::move(*lt);
  } else {
    const int64_t pattern = r.size("sliding_window_pattern", 6);
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layer_types.push_back((i + 1) % pattern != 0 ? LayerKind::SlidingAttention : LayerKind::FullAttention);
  }
  const std::optional<int64_t> window = r.nullable_size("sliding_window", 4096);
  if (has_kind(s.layer_types, LayerKind::SlidingAttention)) {
    if (!window) r.error("sliding_window", "is null but layer_types has sliding_attention layers");
    s.sliding_window = window.value_or(0);
  }

  // Gemma3TextConfig.convert_rope_params_to_dict: a nested dict whose
  // full_attention entry takes `rope_scaling` and `rope_theta` (default 1e6) and
  // whose sliding_attention entry takes `rope_local_base_freq` (default 1e4).
  json params = json{{"sliding_attention", {{"rope_type", "default"}}}, {"full_attention", {{"rope_type", "default"}}}};
  if (r.present_non_null("rope_parameters")) {
    params = *r.find("rope_parameters");
    if (!params.is_object()) r.error("rope_parameters", "must be an object, got {}", shown(params));
  }
  for (const char* name : {"full_attention", "sliding_attention"}) {
    if (!params.contains(name) || params[name].is_null()) params[name] = json{{"rope_type", "default"}};
    if (!params[name].is_object())
      r.error(std::string("rope_parameters.") + name, "must be an object, got {}", shown(params[name]));
  }
  if (r.present_non_null("rope_scaling")) {
    // transformers merges rope_scaling into an existing full_attention entry and
    // fails (KeyError) when an explicit rope_parameters has none.
    const json& rs = *r.find("rope_scaling");
    if (!rs.is_object()) r.error("rope_scaling", "must be an object, got {}", shown(rs));
    const json* rp = r.find("rope_parameters");
    if (rp != nullptr && !rp->is_null() && (!rp->contains("full_attention") || (*rp)["full_attention"].is_null()))
      r.error("rope_scaling", "cannot be merged: rope_parameters has no 'full_attention' entry");
    params["full_attention"].update(rs);
  }
  auto set_theta = [&](const char* name, const char* key, double def) {
    json& entry = params[name];
    if (entry.contains("rope_theta")) return;
    if (r.present(key)) {
      if (!r.present_non_null(key)) r.error(key, "must be a number, got null");
      entry["rope_theta"] = r.positive_number(key, def);
    } else {
      entry["rope_theta"] = def;
    }
  };
  set_theta("full_attention", "rope_theta", 1000000.0);
  set_theta("sliding_attention", "rope_local_base_freq", 10000.0);
  // The model's RoPE initializers re-run standardize_rope_params, which fills a
  // missing partial_rotary_factor from a top-level one ('default' RoPE ignores it).
  if (r.present_non_null("partial_rotary_factor")) {
    const double prf = r.number("partial_rotary_factor", 1.0);
    for (const char* name : {"full_attention", "sliding_attention"})
      if (!params[name].contains("partial_rotary_factor")) params[name]["partial_rotary_factor"] = prf;
  }
  // Gemma3RotaryEmbedding (and transformers' RoPE validation) only reads the
  // entries of layer types the model has: the model's RoPE is the full-attention
  // one, rope_local the sliding one when there are both.
  bool have_full = false;
  for (const LayerKind k : {LayerKind::FullAttention, LayerKind::SlidingAttention}) {
    if (!has_kind(s.layer_types, k)) continue;
    const char* name = rope_layer_key(k);
    const Reader pr(params[name], r.file(), r.subject(std::string("rope_parameters.") + name + "."));
    RopeSpec rope = read_rope(pr, s.context_length, true);
    fit_rope_to_head(pr, r, s, rope, s.head_dim, "head_dim", true);
    if (k == LayerKind::FullAttention) {
      s.rope = rope;
      have_full = true;
    } else if (have_full) {
      s.rope_local = rope;
    } else {
      s.rope = rope;
    }
  }
  return s;
}

ModelSpec read_gguf(const GgufMetadataReader& r) {
  GgufCommon c = read_gguf_common(r, {.sliding_window = true});
  ModelSpec& spec = c.spec;
  const GgufFile& f = r.f_;
  const int64_t L = spec.num_layers;
  spec.activation = Activation::GeluTanh;
  spec.norm_weight_plus_one = true;
  spec.scale_embeddings = true;
  spec.qk_norm = true;
  // Attention scale 1/sqrt(query_pre_attn_scalar): head_dim, except Gemma 3
  // 27B (62 layers), which uses hidden / heads (llama.cpp, gemma_pytorch).
  spec.query_pre_attn_scalar = static_cast<double>(
      L == 62 ? spec.hidden_size / spec.num_heads : spec.head_dim);
  if (spec.sliding_window > 0) {
    // Local layers: 5 of every 6 (layer i is global when (i + 1) % 6 == 0),
    // unless the file gives the pattern (a period, or one bool per layer,
    // true = sliding). Local RoPE: base 10000, unscaled.
    const std::string pk = r.key("attention.sliding_window_pattern");
    const GgufValue* pattern = f.find(pk);
    if (pattern != nullptr && pattern->is_array()) {
      if (pattern->element_type() != GgufType::BOOL || static_cast<int64_t>(pattern->size()) != L)
        r.bad(pk, fmt::format("expected {} bools (one per layer)", L));
      for (int64_t i = 0; i < L; ++i)
        if (*pattern->element(static_cast<uint64_t>(i)).as_bool())
          spec.layer_types[static_cast<size_t>(i)] = LayerKind::SlidingAttention;
    } else {
      const int64_t period = r.opt_int("attention.sliding_window_pattern", 1, kGgufMaxLayers).value_or(6);
      for (int64_t i = 0; i < L; ++i)
        if ((i + 1) % period != 0) spec.layer_types[static_cast<size_t>(i)] = LayerKind::SlidingAttention;
    }
    RopeSpec local;
    local.theta = r.opt_float("rope.freq_base_swa", 0.0).value_or(10000.0);
    local.partial_rotary_factor = spec.rope.partial_rotary_factor;
    spec.rope_local = local;
  }
  finish_gguf_spec(r, spec);
  return spec;
}

}  // namespace tessera::model::gemma3

// Gemma 4: its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/gemma4/gemma4.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/ggml_dequant.h"

namespace tessera::model::gemma4 {

using namespace tessera::hf;
using nlohmann::json;

// Gemma 4 attention geometry: head_dim / num_kv_heads of the sliding layers and
// global_head_dim / global_num_kv_heads of the full-attention layers.
//
// Without `per_layer_config` (the Hub's config.json files), Gemma4TextConfig gives
// every full-attention layer head_dim = `global_head_dim` (default 512) and, only
// when attention_k_eq_v, num_key_value_heads = `num_global_key_value_heads` unless
// that is null. With one (transformers 5 writes it, possibly empty) those two keys
// are ignored and its head_dim / num_key_value_heads overrides are the truth; the
// model's rotary embedding needs all layers of a type to agree (transformers fails
// otherwise). Any other override must equal the global value.
void read_gemma4_geometry(const Reader& r, ModelSpec& s) {
  int64_t full_head_dim = s.head_dim;
  int64_t full_kv_heads = s.num_kv_heads;
  const bool explicit_layers = r.present("per_layer_config");
  if (!explicit_layers) {
    full_head_dim = r.size("global_head_dim", 512);
    if (s.attention_k_eq_v)
      full_kv_heads = r.nullable_size("num_global_key_value_heads", std::nullopt).value_or(s.num_kv_heads);
  } else {
    LayerGeometry g;
    check_per_layer_config(r, s, &g);
    std::optional<std::pair<int64_t, int64_t>> kind_geometry[2];  // [sliding, full]
    for (size_t i = 0; i < s.layer_types.size(); ++i) {
      const int64_t hd = g.head_dim.empty() ? s.head_dim : g.head_dim[i].value_or(s.head_dim);
      const int64_t kv = g.kv_heads.empty() ? s.num_kv_heads : g.kv_heads[i].value_or(s.num_kv_heads);
      const bool full = s.layer_types[i] == LayerKind::FullAttention;
      auto& seen = kind_geometry[full ? 1 : 0];
      if (!seen) {
        seen = {hd, kv};
      } else if (*seen != std::pair{hd, kv}) {
        r.error("per_layer_config." + std::to_string(i),
                "gives {} layer {} head_dim {} and {} KV heads, but an earlier one has {} and {}; layers of one "
                "type must agree",
                layer_kind_name(s.layer_types[i]), i, hd, kv, seen->first, seen->second);
      }
    }
    if (kind_geometry[0]) std::tie(s.head_dim, s.num_kv_heads) = *kind_geometry[0];
    std::tie(full_head_dim, full_kv_heads) = *kind_geometry[1];  // the last layer is always full attention
  }
  for (const int64_t kv : {s.num_kv_heads, full_kv_heads})
    if (s.num_heads % kv != 0)
      r.error(explicit_layers ? "per_layer_config" : kv == s.num_kv_heads ? "num_key_value_heads"
                                                                          : "num_global_key_value_heads",
              "{} KV heads do not divide num_attention_heads {}", kv, s.num_heads);
  s.global_head_dim = full_head_dim;
  s.global_num_kv_heads = full_kv_heads;
}

// Gemma 4 (text): plain RMSNorm weights (x̂·w), q/k norms plus a weightless v norm,
// attention scale 1 (the norms set the scale), embeddings × √hidden_size,
// optional per-layer input embeddings, and the last num_kv_shared_layers layers
// reusing the KV of the last earlier layer of the same type. Full-attention layers
// have their own head size and KV heads (read_gemma4_geometry), may share the k
// projection for v (attention_k_eq_v), and default to proportional RoPE; the
// KV-sharing layers may have a double-wide MLP. Mixture-of-experts is refused.
ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "Gemma4ForCausalLM", 262144, 2304, 9216, 30, 8, 4, false, ClassDefaults::HeadDim::Field, 256,
      131072, "rms_norm_eps", 1e-6, "hidden_activation", "gelu_pytorch_tanh", 2, 1, true, false};
  ModelSpec s;
  s.arch = unit.name;
  read_common(r, d, s, /*check_per_layer=*/false);
  s.qk_norm = true;
  s.v_norm = true;
  s.norm_weight_plus_one = false;
  s.scale_embeddings = true;
  s.query_pre_attn_scalar = 1.0;  // Gemma4TextAttention.scaling = 1.0
  s.attention_bias = r.boolean("attention_bias", false);
  s.final_logit_softcap = r.nullable_number("final_logit_softcapping", std::nullopt).value_or(0.0);
  if (s.final_logit_softcap < 0) r.error("final_logit_softcapping", "must not be negative");
  const int64_t window = r.size("sliding_window", 512);

  const std::string bidir =
      r.present_non_null("use_bidirectional_attention") ? r.string("use_bidirectional_attention", "") : "";
  if (bidir == "all") r.error("use_bidirectional_attention", "'all' is not supported (decoder attention is causal)");
  if (!bidir.empty() && bidir != "vision")
    r.error("use_bidirectional_attention", "must be null, 'all' or 'vision', got '{}'", bidir);

  const std::map<std::string, LayerKind> allowed = {{"full_attention", LayerKind::FullAttention},
                                                    {"sliding_attention", LayerKind::SlidingAttention}};
  if (auto lt = read_layer_types(r, s.num_layers, allowed)) {
    s.layer_types = std::move(*lt);
  } else {
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layer_types.push_back((i + 1) % 6 != 0 ? LayerKind::SlidingAttention : LayerKind::FullAttention);
  }
  s.layer_types.back() = LayerKind::FullAttention;  // transformers forces the last layer to full attention
  s.sliding_window = has_kind(s.layer_types, LayerKind::SlidingAttention) ? window : 0;

  s.hidden_size_per_layer_input = r.integer("hidden_size_per_layer_input", 256);
  if (s.hidden_size_per_layer_input < 0 || s.hidden_size_per_layer_input > kMaxSize)
    r.error("hidden_size_per_layer_input", "must be 0 (off) or a positive size, got {}", s.hidden_size_per_layer_input);
  const int64_t vocab_per_layer = r.size("vocab_size_per_layer_input", 262144);
  if (s.hidden_size_per_layer_input > 0 && vocab_per_layer != s.vocab_size)
    r.error("vocab_size_per_layer_input", "{} differs from vocab_size {}; ModelSpec has one vocabulary size",
            vocab_per_layer, s.vocab_size);

  s.num_kv_shared_layers = r.integer("num_kv_shared_layers", 0);
  if (s.num_kv_shared_layers < 0 || s.num_kv_shared_layers > s.num_layers)
    r.error("num_kv_shared_layers", "must be in [0, num_hidden_layers = {}], got {}", s.num_layers,
            s.num_kv_shared_layers);
  if (s.num_kv_shared_layers == s.num_layers)
    r.error("num_kv_shared_layers", "equals num_hidden_layers {}: no layer would produce the shared KV",
            s.num_layers);
  if (s.num_kv_shared_layers > 0) {
    // A shared layer reads the KV of the last unshared layer of its type, so every
    // layer type must occur among the unshared layers (Gemma4TextConfig.kv_sharing_modes).
    const auto first_shared = s.layer_types.begin() + (s.num_layers - s.num_kv_shared_layers);
    for (auto it = first_shared; it != s.layer_types.end(); ++it)
      if (std::find(s.layer_types.begin(), first_shared, *it) == first_shared)
        r.error("num_kv_shared_layers", "shared layers include {} layers but no earlier layer of that type stores KV",
                layer_kind_name(*it));
  }

  if (r.boolean("enable_moe_block", false))
    r.error("enable_moe_block", "true is not supported (ModelSpec has no mixture-of-experts)");
  s.attention_k_eq_v = r.boolean("attention_k_eq_v", false);
  // Gemma4TextMLP doubles only the KV-sharing layers' width.
  s.double_wide_mlp = r.boolean("use_double_wide_mlp", false) && s.num_kv_shared_layers > 0;
  read_gemma4_geometry(r, s);

  // Gemma4TextConfig keeps rope_parameters as given (the model standardizes them,
  // see below). A `rope_scaling` key goes through the deprecated setter and replaces
  // rope_parameters with a flat dict, which the per-layer-type RoPE then cannot
  // read; transformers fails on it, so it is refused here. The default is 10k default
  // RoPE for sliding layers and 1M proportional RoPE over a quarter of the (512-wide)
  // full-attention head.
  json params = json{{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                     {"full_attention",
                      {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}}}};
  if (r.present("rope_scaling"))
    r.error("rope_scaling", "is not supported for Gemma 4 (it would replace the per-layer-type rope_parameters)");
  if (r.present_non_null("rope_parameters")) {
    params = *r.find("rope_parameters");
    if (!params.is_object()) r.error("rope_parameters", "must be an object, got {}", shown(params));
  }
  // transformers validates each entry as given (the keys its type requires;
  // rope_theta only for 'llama3' and 'proportional'). Gemma4TextRotaryEmbedding
  // then initializes the layer types in the order full_attention,
  // sliding_attention: its own 'default' initializer reads the entry as it is,
  // every other one first runs standardize_rope_params, which fills the missing
  // rope_theta (null without a top-level one) and partial_rotary_factor of all
  // entries from top-level keys of those names.
  bool standardized = false;
  for (const LayerKind k : {LayerKind::FullAttention, LayerKind::SlidingAttention}) {
    if (!has_kind(s.layer_types, k)) continue;
    const char* name = rope_layer_key(k);
    if (!params.contains(name) || !params[name].is_object())
      r.error("rope_parameters", "needs an object entry for '{}' layers", name);
    json& entry = params[name];
    const json& type = entry.contains("rope_type") ? entry["rope_type"] : entry.value("type", json("default"));
    if (type != "default") standardized = true;
    if (standardized) {
      const bool theta_required = type == "llama3" || type == "proportional";
      if (!entry.contains("rope_theta") && !theta_required && r.present("rope_theta"))
        entry["rope_theta"] = *r.find("rope_theta");
      if (!entry.contains("partial_rotary_factor") && r.present_non_null("partial_rotary_factor"))
        entry["partial_rotary_factor"] = *r.find("partial_rotary_factor");
    }
    const Reader pr(entry, r.file(), r.subject(std::string("rope_parameters.") + name + "."));
    RopeSpec rope = read_rope(pr, s.context_length, false);
    if (k == LayerKind::FullAttention) {
      // Full-attention layers' RoPE spans their own (global_head_dim wide) heads.
      fit_rope_to_head(pr, r, s, rope, s.global_head_dim,
                       r.present("per_layer_config") ? "per_layer_config" : "global_head_dim", true);
      s.rope = rope;
    } else {
      fit_rope_to_head(pr, r, s, rope, s.head_dim, "head_dim", true);
      s.rope_local = rope;  // the last layer is always full attention: s.rope is the full one
    }
  }
  return s;
}

ModelSpec read_gguf(const GgufMetadataReader& r) {
  GgufCommon c = read_gguf_common(r, {.per_layer_geometry = true, .sliding_window = true});
  ModelSpec& spec = c.spec;
  const GgufFile& f = r.f_;
  const int64_t L = spec.num_layers;
  const std::vector<int64_t>& kv = c.kv_heads;
  const std::vector<int64_t>* ffn = &c.ffn;
  const int64_t rot_dims = c.rot_dims;
  // Gemma 4 (llama.cpp's Gemma4Model converter, gemma4 loader): plain RMSNorm
  // weights, q/k norms and a weightless v norm, attention scale 1, embeddings
  // × √hidden, GELU-tanh, and per layer kind its own head size, KV heads and RoPE.
  spec.activation = Activation::GeluTanh;
  spec.scale_embeddings = true;
  spec.qk_norm = true;
  spec.v_norm = true;
  spec.query_pre_attn_scalar = 1.0;
  spec.attn_logit_softcap = 0.0;  // Gemma 4 has none (llama.cpp ignores the key too)

  // Layer kinds: attention.sliding_window_pattern, one bool per layer (true: sliding).
  const auto swa = r.opt_bool_per_layer("attention.sliding_window_pattern", L);
  if (!swa) fail(f.path(), r.subject(r.key("attention.sliding_window_pattern")), "required key is missing");
  for (int64_t i = 0; i < L; ++i)
    if ((*swa)[static_cast<size_t>(i)]) spec.layer_types[static_cast<size_t>(i)] = LayerKind::SlidingAttention;
  const bool has_sliding = std::find(swa->begin(), swa->end(), true) != swa->end();
  const bool has_full = std::find(swa->begin(), swa->end(), false) != swa->end();
  if (has_sliding && spec.sliding_window == 0)
    fail(f.path(), r.subject(r.key("attention.sliding_window")), "required: the model has sliding-window layers");
  if (!has_sliding) spec.sliding_window = 0;

  // KV sharing: the last attention.shared_kv_layers layers attend over the KV of
  // the last earlier layer of their kind, which must exist (transformers' rule,
  // the one ModelSpec carries). llama.cpp instead takes layer first_shared - 1
  // for full-attention and first_shared - 2 for sliding layers: the same layers
  // when the last two unshared layers are sliding then full, as in E2B and E4B.
  spec.num_kv_shared_layers = r.opt_int("attention.shared_kv_layers", 0, L - 1).value_or(0);
  const int64_t first_shared = L - spec.num_kv_shared_layers;
  for (int64_t i = first_shared; i < L; ++i) {
    const LayerKind k = spec.layer_types[static_cast<size_t>(i)];
    if (std::find(spec.layer_types.begin(), spec.layer_types.begin() + first_shared, k) ==
        spec.layer_types.begin() + first_shared)
      r.bad(r.key("attention.shared_kv_layers"),
            fmt::format("shared layers include {} layers but no earlier layer of that type stores KV",
                        layer_kind_name(k)));
  }

  // Head sizes: attention.key_length is the full-attention layers' (read above),
  // attention.key_length_swa the sliding layers'; values as wide as keys.
  if (!r.opt_int("attention.key_length"))
    fail(f.path(), r.subject(r.key("attention.key_length")), "required key is missing");
  spec.global_head_dim = spec.head_dim;
  spec.head_dim = r.req_int("attention.key_length_swa");
  if (auto v = r.opt_int("attention.value_length_swa"); v && *v != spec.head_dim)
    r.bad(r.key("attention.value_length_swa"),
          fmt::format("value head size {} differs from key head size {}", *v, spec.head_dim));

  // KV heads: head_count_kv is one number or one per layer; each kind's layers agree.
  int64_t kind_kv[2] = {0, 0};  // [sliding, full]
  for (int64_t i = 0; i < L; ++i) {
    int64_t& seen = kind_kv[(*swa)[static_cast<size_t>(i)] ? 0 : 1];
    const int64_t x = kv[static_cast<size_t>(i)];
    if (seen != 0 && seen != x)
      r.bad(r.key("attention.head_count_kv"),
            fmt::format("layer {} has {} KV heads, an earlier {} layer {}; layers of one kind must agree", i, x,
                        (*swa)[static_cast<size_t>(i)] ? "sliding" : "full-attention", seen));
    seen = x;
  }
  spec.num_kv_heads = kind_kv[0] != 0 ? kind_kv[0] : kind_kv[1];
  spec.global_num_kv_heads = kind_kv[1] != 0 ? kind_kv[1] : kind_kv[0];
  for (const int64_t x : {spec.num_kv_heads, spec.global_num_kv_heads})
    if (spec.num_heads % x != 0)
      r.bad(r.key("attention.head_count_kv"),
            fmt::format("{} query heads are not a multiple of {} kv heads", spec.num_heads, x));

  // MLP width: feed_forward_length is one number or one per layer; with
  // use_double_wide_mlp the converter lists the KV-sharing layers at twice the width.
  spec.intermediate_size = 0;
  for (int64_t i = 0; i < first_shared; ++i) {
    const int64_t x = (*ffn)[static_cast<size_t>(i)];
    if (x == 0 || (spec.intermediate_size != 0 && x != spec.intermediate_size))
      r.bad(r.key("feed_forward_length"),
            fmt::format("layer {} has width {}; the layers before the KV-sharing ones must agree (and be > 0)", i, x));
    spec.intermediate_size = x;
  }
  for (int64_t i = first_shared; i < L; ++i) {
    const int64_t x = (*ffn)[static_cast<size_t>(i)];
    const bool wide = x == 2 * spec.intermediate_size;
    if ((x != spec.intermediate_size && !wide) || (i > first_shared && wide != spec.double_wide_mlp))
      r.bad(r.key("feed_forward_length"),
            fmt::format("KV-sharing layer {} has width {}: expected {} for every one of them, or twice that "
                        "(double-wide MLPs) for every one",
                        i, x, spec.intermediate_size));
    spec.double_wide_mlp = wide;
  }

  // Per-layer embeddings: embedding_length_per_layer_input values per layer (0: none).
  spec.hidden_size_per_layer_input = r.opt_int("embedding_length_per_layer_input", 0).value_or(0);

  // attention_k_eq_v: full-attention layers with a k projection but no v
  // projection use the keys' projection for the values (llama.cpp: attn_v optional).
  int with_v = 0, without_v = 0;
  for (int64_t i = 0; i < first_shared; ++i) {
    if ((*swa)[static_cast<size_t>(i)] || !f.find_tensor(fmt::format("blk.{}.attn_k.weight", i))) continue;
    (f.find_tensor(fmt::format("blk.{}.attn_v.weight", i)) ? with_v : without_v)++;
  }
  if (with_v > 0 && without_v > 0)
    fail(f.path(), "tensor 'blk.*.attn_v.weight'",
         "present for some full-attention layers and absent for others (all or none: attention_k_eq_v)");
  spec.attention_k_eq_v = without_v > 0;

  if (auto n = r.opt_int("expert_count", 0); n && *n > 0)
    r.bad(r.key("expert_count"), "mixture-of-experts Gemma 4 is not supported (ModelSpec has no experts)");

  // RoPE of the full-attention layers: llama.cpp rotates rope.dimension_count
  // dims (the whole global head, in halves) at θ^(-2i/head) / d_i with per-pair
  // divisors d_i from rope_freqs.weight. The converter writes d_i = 1 for the
  // first int(prf · head / 2) pairs and 1e30 for the rest, which then never
  // turn: transformers' 'proportional' RoPE with partial_rotary_factor prf,
  // factor 1. Other divisors (or RoPE scaling keys) have no HF equivalent.
  if (spec.rope.scaling.type != "default")
    r.bad(r.key("rope.scaling.type"),
          fmt::format("RoPE scaling '{}' is not supported for Gemma 4 (its full-attention RoPE is proportional)",
                      spec.rope.scaling.type));
  if (rot_dims != spec.global_head_dim)
    r.bad(r.key("rope.dimension_count"),
          fmt::format("{} rotary dimensions for {}-wide full-attention heads: Gemma 4's proportional RoPE spans "
                      "the whole head",
                      rot_dims, spec.global_head_dim));
  if (has_full) {
    const TensorView* rf = f.find_tensor("rope_freqs.weight");
    if (rf == nullptr)
      fail(f.path(), "tensor 'rope_freqs.weight'",
           "required: it gives Gemma 4's full-attention layers their proportional RoPE");
    const std::string subject = "tensor 'rope_freqs.weight'";
    const uint64_t pairs = static_cast<uint64_t>(spec.global_head_dim / 2);
    if (rf->shape.size() != 1 || rf->shape[0] != pairs)
      fail(f.path(), subject, "expected {} entries (half the full-attention head size)", pairs);
    // A divisor this large keeps a pair still for any position below 1e6 to
    // within 1e-14 radians.
    constexpr float kStill = 1e20f;
    const std::vector<float> d = dequantize(*rf);
    size_t turning = 0;
    while (turning < d.size() && d[turning] == 1.0f) ++turning;
    for (size_t i = turning; i < d.size(); ++i)
      if (!(d[i] >= kStill))
        fail(f.path(), subject,
             "entry {} is {}: Gemma 4's proportional RoPE needs divisors 1 (turning pairs) followed by >= 1e20 "
             "(still pairs)",
             i, d[i]);
    if (turning == 0) fail(f.path(), subject, "no pair turns (every divisor is >= 1e20)");
    spec.rope.scaling.type = "proportional";
    spec.rope.scaling.factor = 1.0;
    spec.rope.partial_rotary_factor = 2.0 * static_cast<double>(turning) / static_cast<double>(spec.global_head_dim);
  }
  // Sliding layers: plain RoPE over the whole (sliding) head at rope.freq_base_swa
  // (llama.cpp: the full layers' base when absent).
  if (has_sliding) {
    if (auto d = r.opt_int("rope.dimension_count_swa"); d && *d != spec.head_dim)
      r.bad(r.key("rope.dimension_count_swa"),
            fmt::format("{} rotary dimensions for {}-wide sliding heads: partial rotation of sliding layers is "
                        "not supported (transformers rotates the whole head)",
                        *d, spec.head_dim));
    RopeSpec local;
    local.theta = r.opt_float("rope.freq_base_swa", 0.0).value_or(spec.rope.theta);
    if (!(local.theta > 0.0)) r.bad(r.key("rope.freq_base_swa"), "must be > 0");
    spec.rope_local = local;
  }
  finish_gguf_spec(r, spec);
  // Gemma 4's per-layer table: one row per token, each layer's values side by side.
  if (const TensorView* ple = f.find_tensor("per_layer_token_embd.weight"); ple != nullptr) {
    const std::vector<uint64_t> want = {static_cast<uint64_t>(spec.vocab_size),
                                        static_cast<uint64_t>(spec.num_layers * spec.hidden_size_per_layer_input)};
    if (ple->shape != want)
      fail(f.path(), "tensor 'per_layer_token_embd.weight'",
           "shape [{}] does not match vocab {} x ({} layers x {} per-layer values)", fmt::join(ple->shape, ", "),
           spec.vocab_size, spec.num_layers, spec.hidden_size_per_layer_input);
  }
  return spec;
}

}  // namespace tessera::model::gemma4

#include "sources/hf_config.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/mapped_file.h"

namespace tessera {
namespace hf {

using nlohmann::json;

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

json load_json(const std::string& path) {
  const std::shared_ptr<const MappedFile> f = MappedFile::open(path);
  if (f->size() > kMaxConfigBytes)
    fail(path, "", "{} bytes is larger than the {}-byte limit for a JSON config", f->size(), kMaxConfigBytes);
  const char* begin = reinterpret_cast<const char*>(f->data());
  try {
    return json::parse(begin, begin + f->size());
  } catch (const json::exception& e) {
    fail(path, "", "invalid JSON: {}", e.what());
  }
}

Activation parse_activation(const Reader& r, const char* key, const char* def) {
  const std::string a = r.string(key, def);
  // Names from transformers' ACT2FN. The tanh-approximated GELU has several
  // spellings that compute 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
  if (a == "silu" || a == "swish") return Activation::SiLU;
  if (a == "gelu_pytorch_tanh" || a == "gelu_new" || a == "gelu_fast" || a == "gelu_python_tanh")
    return Activation::GeluTanh;
  if (a == "gelu" || a == "gelu_python") return Activation::Gelu;
  r.error(key, "unsupported activation '{}' (supported: silu, swish, gelu, gelu_pytorch_tanh, gelu_new, "
               "gelu_fast)", a);
}

std::vector<int64_t> parse_eos(const Reader& r, const json& v, std::string_view key) {
  std::vector<int64_t> out;
  auto add = [&](int64_t id) {
    if (id >= 0) out.push_back(id);  // negative ids mean "no token" in some configs
  };
  if (v.is_null()) return out;
  if (v.is_array()) {
    for (const json& e : v) add(r.as_integer(key, e));
    return out;
  }
  if (v.is_number_integer()) {
    add(r.as_integer(key, v));
    return out;
  }
  r.error(key, "must be an integer, a list of integers or null, got {}", shown(v));
}

void read_token_ids(const Reader& r, const ClassDefaults& d, ModelSpec& s) {
  const std::optional<int64_t> bos = r.nullable_integer("bos_token_id", d.bos);
  s.bos_token_id = bos && *bos >= 0 ? *bos : -1;
  s.eos_token_ids.clear();
  if (const json* v = r.find("eos_token_id")) {
    s.eos_token_ids = parse_eos(r, *v, "eos_token_id");
  } else if (d.eos && *d.eos >= 0) {
    s.eos_token_ids = {*d.eos};
  }
}

std::string source_architecture(const Reader& r, const char* def) {
  const json* v = r.find("architectures");
  if (v == nullptr || v->is_null()) return def;
  if (!v->is_array()) r.error("architectures", "must be a list of strings, got {}", shown(*v));
  for (const json& e : *v)
    if (!e.is_string()) r.error("architectures", "must be a list of strings, got {}", shown(*v));
  return v->empty() ? std::string(def) : (*v)[0].get<std::string>();
}

void check_per_layer_config(const Reader& r, const ModelSpec& s, LayerGeometry* geometry) {
  const json* v = r.find("per_layer_config");
  if (v == nullptr || v->is_null()) return;
  if (!v->is_object()) r.error("per_layer_config", "must be an object of layer index to overrides, got {}", shown(*v));
  if (geometry) {
    geometry->head_dim.assign(static_cast<size_t>(s.num_layers), std::nullopt);
    geometry->kv_heads.assign(static_cast<size_t>(s.num_layers), std::nullopt);
  }
  std::map<int64_t, std::string> keys;  // layer -> key; "7" and "07" name the same layer
  for (const auto& [idx, overrides] : v->items()) {
    int64_t layer = -1;
    const auto [end, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), layer);
    if (ec != std::errc() || end != idx.data() + idx.size() || layer < 0 || layer >= s.num_layers)
      r.error("per_layer_config." + idx, "key must be a layer index in [0, {})", s.num_layers);
    // transformers keeps whichever comes last in the file; a JSON object has no order.
    if (const auto [it, inserted] = keys.emplace(layer, idx); !inserted)
      r.error("per_layer_config." + idx, "names layer {} again (also '{}')", layer, it->second);
  }
  for (const auto& [layer, idx] : keys) {
    const json& overrides = (*v)[idx];
    const std::string subject = "per_layer_config." + idx;
    if (!overrides.is_object()) r.error(subject, "must be an object of overrides, got {}", shown(overrides));
    for (const auto& [field, value] : overrides.items()) {
      if (geometry && (field == "head_dim" || field == "num_key_value_heads")) {
        const std::string key = subject + "." + field;
        const int64_t n = r.check_size(key, r.as_integer(key, value));
        (field == "head_dim" ? geometry->head_dim : geometry->kv_heads)[static_cast<size_t>(layer)] = n;
        continue;
      }
      json global;
      if (field == "head_dim") {
        global = s.head_dim;
      } else if (field == "num_key_value_heads") {
        global = s.num_kv_heads;
      } else if (const json* g = r.find(field)) {
        global = *g;
      }
      if (global.is_null() || global != value)
        r.error(subject + "." + field, "per-layer value {} differs from the global one; ModelSpec has one value for "
                                       "all layers", shown(value));
    }
  }
}

void read_common(const Reader& r, const ClassDefaults& d, ModelSpec& s, bool check_per_layer) {
  s.source_architecture = source_architecture(r, d.class_name);
  s.vocab_size = r.size("vocab_size", d.vocab);
  s.hidden_size = r.size("hidden_size", d.hidden);
  s.intermediate_size = r.size("intermediate_size", d.intermediate);
  s.num_layers = r.size("num_hidden_layers", d.layers);
  if (s.num_layers > kMaxLayers)
    r.error("num_hidden_layers", "{} exceeds the supported maximum {}", s.num_layers, kMaxLayers);
  s.num_heads = r.size("num_attention_heads", d.heads);

  if (d.kv_heads_nullable) {
    s.num_kv_heads = r.nullable_size("num_key_value_heads", d.kv_heads).value_or(s.num_heads);
  } else {
    s.num_kv_heads = r.size("num_key_value_heads", d.kv_heads.value_or(s.num_heads));
  }
  if (s.num_heads % s.num_kv_heads != 0)
    r.error("num_key_value_heads", "{} does not divide num_attention_heads {}", s.num_kv_heads, s.num_heads);

  if (d.hidden_divisible_by_heads && s.hidden_size % s.num_heads != 0)
    r.error("num_attention_heads", "hidden_size {} is not a multiple of num_attention_heads {}", s.hidden_size,
            s.num_heads);
  std::optional<int64_t> head_dim;
  switch (d.head_dim_kind) {
    case ClassDefaults::HeadDim::Field: head_dim = r.size("head_dim", d.head_dim); break;
    case ClassDefaults::HeadDim::NullableField: head_dim = r.nullable_size("head_dim", std::nullopt); break;
    case ClassDefaults::HeadDim::Extra:
      // Undeclared: the attention reads getattr(config, "head_dim", hidden // heads),
      // so a present null would reach the model as None.
      if (r.present("head_dim")) head_dim = r.size("head_dim", 0);
      break;
  }
  if (!head_dim) {
    // transformers derives head_dim = hidden_size // num_attention_heads; a
    // remainder would silently drop hidden units, so it is an error here.
    if (s.hidden_size % s.num_heads != 0)
      r.error("head_dim", "absent, and hidden_size {} is not a multiple of num_attention_heads {}", s.hidden_size,
              s.num_heads);
    head_dim = s.hidden_size / s.num_heads;
  }
  s.head_dim = *head_dim;

  s.context_length = r.size("max_position_embeddings", d.max_positions);
  s.norm_eps = r.number(d.eps_key, d.eps);
  if (s.norm_eps < 0) r.error(d.eps_key, "must not be negative, got {}", s.norm_eps);
  s.activation = d.act_key ? parse_activation(r, d.act_key, d.act) : Activation::SiLU;
  s.tie_word_embeddings = r.boolean("tie_word_embeddings", d.tie);
  read_token_ids(r, d, s);
  if (check_per_layer) check_per_layer_config(r, s);
}

std::optional<std::vector<LayerKind>> read_layer_types(const Reader& r, int64_t num_layers,
                                                       const std::map<std::string, LayerKind>& allowed) {
  const json* v = r.find("layer_types");
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_array()) r.error("layer_types", "must be a list of strings, got {}", shown(*v));
  if (static_cast<int64_t>(v->size()) != num_layers)
    r.error("layer_types", "has {} entries but num_hidden_layers is {}", v->size(), num_layers);
  std::vector<LayerKind> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string()) r.error("layer_types", "entry {} must be a string, got {}", i, shown(e));
    std::string name = e.get<std::string>();
    if (name == "attention") name = "full_attention";
    if (name == "mamba") name = "linear_attention";
    const auto it = allowed.find(name);
    if (it == allowed.end()) {
      std::string names;
      for (const auto& [k, _] : allowed) names += (names.empty() ? "" : ", ") + k;
      r.error("layer_types", "entry {} is '{}'; this model type supports {}", i, name, names);
    }
    out.push_back(it->second);
  }
  return out;
}

bool has_kind(const std::vector<LayerKind>& kinds, LayerKind k) {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

const char* rope_layer_key(LayerKind k) {
  return k == LayerKind::SlidingAttention ? "sliding_attention" : "full_attention";
}

// ---------------------------------------------------------------------------
// RoPE
//
// After transformers' standardization a RoPE parameter dict holds rope_type,
// rope_theta, optionally partial_rotary_factor and the scaling keys of its type.
// The inverse frequencies are, for rotated dimension pairs i = 0 .. d/2 - 1 with
// d = int(head_dim · partial_rotary_factor), head_dim being the layer's head size
// (layer_head_dim(): global_head_dim for Gemma 4 full-attention layers):
//   default      θ^(-2i/d)
//   linear       θ^(-2i/d) / factor
//   dynamic      NTK: θ is raised for sequences longer than max_position_embeddings
//   llama3       per-wavelength blend of θ^(-2i/d) and θ^(-2i/d)/factor
//   yarn         ramp between interpolation and extrapolation, cos/sin scaled by attention_factor
//   proportional (Gemma 4) θ^(-2i/head_dim) for i < int(prf · head_dim / 2), zero beyond:
//                the whole head is rotated in halves, but only the first pairs turn
// ---------------------------------------------------------------------------

// Reads one standardized RoPE dict. `max_positions` stands in for a missing
// original_max_position_embeddings (the default standardize_rope_params applies).
RopeSpec read_rope(const Reader& r, int64_t max_positions, bool fill_original_max) {
  RopeSpec rope;
  const std::string type = r.present("rope_type") ? r.string("rope_type", "default") : r.string("type", "default");
  if (!r.present_non_null("rope_theta")) r.error("rope_theta", "missing");
  rope.theta = r.positive_number("rope_theta", 0);
  rope.partial_rotary_factor = r.nullable_number("partial_rotary_factor", 1.0).value_or(1.0);
  if (!(rope.partial_rotary_factor > 0 && rope.partial_rotary_factor <= 1))
    r.error("partial_rotary_factor", "must be in (0, 1], got {}", rope.partial_rotary_factor);
  RopeScaling& sc = rope.scaling;
  sc.type = type;

  auto required_number = [&](const char* key) {
    if (!r.present(key)) r.error(key, "missing (required for rope_type '{}')", type);
    return r.positive_number(key, 0);
  };
  auto original_max = [&]() -> int64_t {
    if (!r.present("original_max_position_embeddings")) {
      if (!fill_original_max)
        r.error("original_max_position_embeddings", "missing (required for rope_type '{}')", type);
      return max_positions;
    }
    return r.size("original_max_position_embeddings", 0);
  };

  if (type == "default") {
    // no scaling keys
  } else if (type == "linear" || type == "dynamic") {
    sc.factor = required_number("factor");
    if (type == "dynamic") sc.original_max_position_embeddings = max_positions;
  } else if (type == "llama3") {
    sc.factor = required_number("factor");
    sc.low_freq_factor = required_number("low_freq_factor");
    sc.high_freq_factor = required_number("high_freq_factor");
    sc.original_max_position_embeddings = original_max();
    if (!(sc.high_freq_factor > sc.low_freq_factor))
      r.error("high_freq_factor", "must exceed low_freq_factor ({} <= {})", sc.high_freq_factor, sc.low_freq_factor);
  } else if (type == "yarn") {
    if (!r.present("factor")) r.error("factor", "missing (required for rope_type 'yarn')");
    sc.original_max_position_embeddings = original_max();
    // factor: null means max_position_embeddings / original_max_position_embeddings.
    sc.factor = r.nullable_number("factor", std::nullopt)
                    .value_or(static_cast<double>(max_positions) /
                              static_cast<double>(sc.original_max_position_embeddings));
    if (!(sc.factor > 0)) r.error("factor", "must be positive, got {}", sc.factor);
    // beta_* use Python `or`: null or 0 falls back to the default.
    const double bf = r.nullable_number("beta_fast", 32.0).value_or(32.0);
    const double bs = r.nullable_number("beta_slow", 1.0).value_or(1.0);
    sc.beta_fast = bf != 0 ? bf : 32.0;
    sc.beta_slow = bs != 0 ? bs : 1.0;
    // truncate (default true) floors/ceils the correction range; null or false does not.
    if (r.present("truncate") && !(r.present_non_null("truncate") && r.boolean("truncate", true)))
      r.error("truncate", "only true is supported (ModelSpec has no untruncated YaRN correction range)");
    // attention_factor (cos/sin multiplier): explicit, else 0.1·ln(factor) + 1, or with
    // mscale / mscale_all_dim the ratio get_mscale(f, mscale) / get_mscale(f, mscale_all_dim).
    auto get_mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    if (const std::optional<double> af = r.nullable_number("attention_factor", std::nullopt)) {
      if (*af < 0) r.error("attention_factor", "must not be negative, got {}", *af);
      sc.attention_factor = *af;
    } else {
      const double ms = r.nullable_number("mscale", 0.0).value_or(0.0);
      const double msa = r.nullable_number("mscale_all_dim", 0.0).value_or(0.0);
      sc.attention_factor = (ms != 0 && msa != 0) ? get_mscale(sc.factor, ms) / get_mscale(sc.factor, msa)
                                                  : get_mscale(sc.factor, 1.0);
    }
  } else if (type == "proportional") {
    sc.factor = r.number("factor", 1.0);  // null reaches the model's division as None
    if (!(sc.factor > 0)) r.error("factor", "must be positive, got {}", sc.factor);
  } else if (type == "longrope") {
    r.error("rope_type", "'longrope' is not supported (ModelSpec has no per-dimension short/long factors)");
  } else {
    r.error("rope_type", "unknown RoPE type '{}' (supported: default, linear, dynamic, yarn, llama3, proportional)",
            type);
  }
  return rope;
}

bool has_attention(const ModelSpec& s) {
  return has_kind(s.layer_types, LayerKind::FullAttention) || has_kind(s.layer_types, LayerKind::SlidingAttention);
}

// What the modeling code does with the RoPE of layers whose heads are `head_dim`
// wide (`head_key` names that size in errors). With `partial_rotary` (Qwen 3.5)
// the attention rotates part of a head; everywhere else cos/sin multiply the
// whole head, so:
//   'proportional' spans the whole head (zero frequencies past the factor);
//   'default' is computed by the model's rotary embedding over the whole head,
//     ignoring partial_rotary_factor, so the factor becomes 1;
//   any other type with a factor < 1 gives cos/sin narrower than the head, on
//     which transformers' model fails: refused.
// The rotated width must be even (pairs). `applied`: some layer uses this RoPE;
// without one (no attention layers) the model builds it but never applies it.
void fit_rope_to_head(const Reader& rope_reader, const Reader& r, const ModelSpec& s, RopeSpec& rope,
                      int64_t head_dim, const char* head_key, bool applied, bool partial_rotary) {
  const std::string& type = rope.scaling.type;
  if (!partial_rotary && type == "default") rope.partial_rotary_factor = 1.0;
  const int64_t rotated = type == "proportional"
                              ? head_dim
                              : static_cast<int64_t>(static_cast<double>(head_dim) * rope.partial_rotary_factor);
  // Building the model, dynamic NTK RoPE raises θ to the power d/(d - 2).
  if (type == "dynamic" && rotated == 2)
    r.error(head_key, "dynamic RoPE needs a rotary dimension other than 2, got head size {} with "
                      "partial_rotary_factor {}", head_dim, rope.partial_rotary_factor);
  if (!applied) return;
  if (!partial_rotary && type != "proportional" && rope.partial_rotary_factor != 1.0)
    rope_reader.error("partial_rotary_factor",
                      "{} is not supported with rope_type '{}': {}'s attention rotates the whole head (only "
                      "'proportional' RoPE leaves part of it unturned)",
                      rope.partial_rotary_factor, type, s.arch);
  if (rotated % 2 != 0)
    r.error(head_key, "RoPE needs an even rotary dimension, got head size {} with partial_rotary_factor {}", head_dim,
            rope.partial_rotary_factor);
}

// The RoPE of a class that keeps transformers' generic convert_rope_params_to_dict:
// `rope_scaling` (legacy) wins over `rope_parameters`; top-level `rope_theta` and
// `partial_rotary_factor` fill keys the dict lacks. Sets s.rope; a dict nested by
// layer type is refused (these models have one rotary embedding).
void read_generic_rope(const Reader& r, ModelSpec& s, double default_theta,
                       std::optional<double> default_partial_rotary, bool class_has_layer_types) {
  json params = json::object();
  std::string key = "rope_parameters";
  if (r.present_non_null("rope_scaling") &&
      !(r.find("rope_scaling")->is_object() && r.find("rope_scaling")->empty())) {
    key = "rope_scaling";
    params = *r.find("rope_scaling");
  } else if (r.present_non_null("rope_parameters")) {
    params = *r.find("rope_parameters");
  }
  if (!params.is_object()) r.error(key, "must be an object, got {}", shown(params));
  const double theta = r.nullable_number("rope_theta", default_theta).value_or(default_theta);
  const std::optional<double> prf = r.present("partial_rotary_factor")
                                        ? r.nullable_number("partial_rotary_factor", std::nullopt)
                                        : default_partial_rotary;
  // Phi-3 style: a top-level original_max_position_embeddings wins inside the dict.
  const int64_t top_original = r.present_non_null("original_max_position_embeddings")
                                   ? r.size("original_max_position_embeddings", 0)
                                   : 0;  // 0: absent

  auto standardize = [&](json& d) {
    if (!d.contains("rope_theta")) d["rope_theta"] = theta;
    if (prf && !d.contains("partial_rotary_factor")) d["partial_rotary_factor"] = *prf;
  };

  // Nested when a key names a layer type the config declares (a class without
  // layer_types, like Llama, is never nested).
  std::set<std::string> used;
  if (class_has_layer_types)
    for (LayerKind k : s.layer_types) used.insert(layer_kind_name(k));
  bool nested = false;
  for (const auto& [k, _] : params.items())
    if (used.count(k)) nested = true;

  // These models build one rotary embedding from rope_parameters["rope_type"],
  // which a dict keyed by layer type lacks: transformers' model fails on it.
  if (nested) r.error(key, "is nested by layer type, but {} has one RoPE for all layers", s.arch);

  standardize(params);
  if (top_original > 0) params["original_max_position_embeddings"] = top_original;
  const Reader pr(params, r.file(), r.subject(key) + ".");
  s.rope = read_rope(pr, s.context_length, true);
  fit_rope_to_head(pr, r, s, s.rope, s.head_dim, "head_dim", has_attention(s), default_partial_rotary.has_value());
}

void read_qwen_layers(const Reader& r, ModelSpec& s) {
  const bool use_sw = r.boolean("use_sliding_window", false);
  const int64_t sw = r.nullable_size("sliding_window", 4096).value_or(0);
  const int64_t window = use_sw ? sw : 0;  // 0: no sliding window
  const int64_t max_window_layers = r.integer("max_window_layers", 28);
  const std::map<std::string, LayerKind> allowed = {{"full_attention", LayerKind::FullAttention},
                                                    {"sliding_attention", LayerKind::SlidingAttention}};
  if (auto lt = read_layer_types(r, s.num_layers, allowed)) {
    s.layer_types = std::move(*lt);
  } else {
    s.layer_types.clear();
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layer_types.push_back(window > 0 && i >= max_window_layers ? LayerKind::SlidingAttention
                                                               : LayerKind::FullAttention);
  }
  if (has_kind(s.layer_types, LayerKind::SlidingAttention)) {
    if (window == 0)
      r.error("layer_types", "has sliding_attention layers but no sliding window (use_sliding_window is false "
                             "or sliding_window is null)");
    s.sliding_window = window;
  } else {
    s.sliding_window = 0;
  }
}

ModelSpec read_text_config(const Reader& top, const char* text_type, ModelSpec (*read)(const Reader&),
                           const char* class_name, bool tie_default) {
  static const json empty = json::object();
  const json* tc = top.find("text_config");
  const json& text = (tc == nullptr || tc->is_null()) ? empty : *tc;
  if (!text.is_object()) top.error("text_config", "must be an object, got {}", shown(text));
  const Reader r(text, top.file(), "text_config.");
  if (r.present("model_type") && r.string("model_type", "") != text_type)
    r.error("model_type", "must be '{}', got '{}'", text_type, r.string("model_type", ""));
  ModelSpec s = read(r);
  s.source_architecture = source_architecture(top, class_name);
  s.tie_word_embeddings = top.boolean("tie_word_embeddings", tie_default);
  if (top.present_non_null("bos_token_id")) {
    const int64_t bos = top.integer("bos_token_id", -1);
    s.bos_token_id = bos >= 0 ? bos : -1;
  }
  if (top.present_non_null("eos_token_id")) s.eos_token_ids = parse_eos(top, *top.find("eos_token_id"), "eos_token_id");
  return s;
}

}  // namespace hf

std::optional<std::vector<int64_t>> hf_generation_eos_token_ids(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = (std::filesystem::path(path) / "generation_config.json").string();
  } else if (std::filesystem::path(path).filename() != "generation_config.json") {
    file = (std::filesystem::path(path).parent_path() / "generation_config.json").string();
  }
  if (!std::filesystem::exists(file, ec)) return std::nullopt;
  const nlohmann::json j = hf::load_json(file);
  if (!j.is_object()) fail(file, "", "must be a JSON object, got {}", j.type_name());
  const hf::Reader r(j, file, "");
  const nlohmann::json* v = r.find("eos_token_id");
  if (v == nullptr || v->is_null()) return std::nullopt;
  return hf::parse_eos(r, *v, "eos_token_id");
}

}  // namespace tessera

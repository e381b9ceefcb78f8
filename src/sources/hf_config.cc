#include "sources/hf_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/mapped_file.h"

namespace tessera {
namespace {

using nlohmann::json;

// Bounds that keep a hostile config from asking for absurd allocations downstream:
// every size fits in 31 bits (so products of two sizes fit in int64), and the
// layer count stays small enough that a per-layer vector is cheap.
constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxLayers = int64_t{1} << 16;
constexpr uint64_t kMaxConfigBytes = 64ull << 20;

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// Typed access to one JSON object (the config, its text_config, or a RoPE
// parameter dict). Missing keys take the caller's default, as a transformers
// config class does; a present key must have the class's declared type.
class Reader {
 public:
  Reader(const json& j, const std::string& file, std::string prefix)
      : j_(j), file_(file), prefix_(std::move(prefix)) {}

  const std::string& file() const { return file_; }
  std::string subject(std::string_view key) const { return prefix_ + std::string(key); }

  const json* find(std::string_view key) const {
    const auto it = j_.find(std::string(key));
    return it == j_.end() ? nullptr : &*it;
  }
  bool present(std::string_view key) const { return find(key) != nullptr; }
  bool present_non_null(std::string_view key) const {
    const json* v = find(key);
    return v != nullptr && !v->is_null();
  }

  template <typename... Args>
  [[noreturn]] void error(std::string_view key, fmt::format_string<Args...> problem, Args&&... args) const {
    fail(file_, subject(key), problem, std::forward<Args>(args)...);
  }

  // int field: missing -> def; null -> nullopt when nullable, else an error.
  std::optional<int64_t> nullable_integer(std::string_view key, std::optional<int64_t> def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (v->is_null()) return std::nullopt;
    return as_integer(key, *v);
  }
  int64_t integer(std::string_view key, int64_t def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    return as_integer(key, *v);
  }
  int64_t as_integer(std::string_view key, const json& v) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        error(key, "integer {} is out of range", shown(v));
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    error(key, "must be an integer, got {}", shown(v));
  }
  // A size: a positive integer no larger than kMaxSize.
  int64_t size(std::string_view key, int64_t def) const { return check_size(key, integer(key, def)); }
  std::optional<int64_t> nullable_size(std::string_view key, std::optional<int64_t> def) const {
    const std::optional<int64_t> v = nullable_integer(key, def);
    if (v) check_size(key, *v);
    return v;
  }
  int64_t check_size(std::string_view key, int64_t v) const {
    if (v <= 0) error(key, "must be a positive integer, got {}", v);
    if (v > kMaxSize) error(key, "{} exceeds the supported maximum {}", v, kMaxSize);
    return v;
  }

  // float field (integers accepted): missing -> def; null -> nullopt when nullable.
  std::optional<double> nullable_number(std::string_view key, std::optional<double> def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (v->is_null()) return std::nullopt;
    return as_number(key, *v);
  }
  double number(std::string_view key, double def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    return as_number(key, *v);
  }
  double as_number(std::string_view key, const json& v) const {
    if (!v.is_number()) error(key, "must be a number, got {}", shown(v));
    const double d = v.get<double>();
    if (!std::isfinite(d)) error(key, "must be finite, got {}", shown(v));
    return d;
  }
  double positive_number(std::string_view key, double def) const {
    const double d = number(key, def);
    if (!(d > 0)) error(key, "must be positive, got {}", d);
    return d;
  }

  bool boolean(std::string_view key, bool def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_boolean()) error(key, "must be true or false, got {}", shown(*v));
    return v->get<bool>();
  }

  std::string string(std::string_view key, const std::string& def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_string()) error(key, "must be a string, got {}", shown(*v));
    return v->get<std::string>();
  }

 private:
  const json& j_;
  const std::string& file_;
  std::string prefix_;
};

// Fields every supported text config shares, with that class's defaults.
struct ClassDefaults {
  const char* class_name;  // default source_architecture
  int64_t vocab, hidden, intermediate, layers, heads;
  std::optional<int64_t> kv_heads;  // nullopt: None, i.e. = num_attention_heads
  bool kv_heads_nullable;
  // head_dim: Field (declared int), NullableField (int | None, None derives it),
  // Extra (not declared; read if config.json carries it, else derived).
  enum class HeadDim { Field, NullableField, Extra } head_dim_kind;
  int64_t head_dim;  // default for HeadDim::Field
  int64_t max_positions;
  const char* eps_key;
  double eps;
  const char* act_key;  // nullptr: fixed SiLU (LFM2)
  const char* act;
  std::optional<int64_t> bos, eos;
  bool tie;
  bool hidden_divisible_by_heads;  // validate_architecture() of Llama and Gemma 3
};

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

// Per-layer attention geometry taken from `per_layer_config` (Gemma 4): the
// head_dim / num_key_value_heads override of each layer, nullopt where none.
struct LayerGeometry {
  std::vector<std::optional<int64_t>> head_dim, kv_heads;
};

// transformers' heterogeneous configs: `per_layer_config` maps a layer index to
// field overrides. Overrides equal to the global value are dropped (as
// transformers does). With `geometry`, head_dim and num_key_value_heads
// overrides are recorded there for the caller to check; any other override
// would give layers different shapes, which ModelSpec cannot express.
void check_per_layer_config(const Reader& r, const ModelSpec& s, LayerGeometry* geometry = nullptr) {
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

// The fields shared by every class: sizes, heads, head_dim, norm eps, activation,
// tokens, tying. `per_layer_config` is checked here unless the class reads it
// itself (Gemma 4).
void read_common(const Reader& r, const ClassDefaults& d, ModelSpec& s, bool check_per_layer = true) {
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

// layer_types, with transformers' legacy renames ("attention" -> "full_attention",
// "mamba" -> "linear_attention"); every entry must be one the class supports and
// there must be one per layer.
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
// wide (`head_key` names that size in errors). Only Qwen 3.5's attention rotates
// part of a head; everywhere else cos/sin multiply the whole head, so:
//   'proportional' spans the whole head (zero frequencies past the factor);
//   'default' is computed by the model's rotary embedding over the whole head,
//     ignoring partial_rotary_factor, so the factor becomes 1;
//   any other type with a factor < 1 gives cos/sin narrower than the head, on
//     which transformers' model fails: refused.
// The rotated width must be even (pairs). `applied`: some layer uses this RoPE;
// without one (no attention layers) the model builds it but never applies it.
void fit_rope_to_head(const Reader& rope_reader, const Reader& r, const ModelSpec& s, RopeSpec& rope,
                      int64_t head_dim, const char* head_key, bool applied) {
  const std::string& type = rope.scaling.type;
  const bool partial_rotary = s.arch == Architecture::Qwen3_5;
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
                      rope.partial_rotary_factor, type, architecture_name(s.arch));
  if (rotated % 2 != 0)
    r.error(head_key, "RoPE needs an even rotary dimension, got head size {} with partial_rotary_factor {}", head_dim,
            rope.partial_rotary_factor);
}

// The RoPE of a class that keeps transformers' generic convert_rope_params_to_dict:
// `rope_scaling` (legacy) wins over `rope_parameters`; top-level `rope_theta` and
// `partial_rotary_factor` fill keys the dict lacks. Sets s.rope; a dict nested by
// layer type is refused (these models have one rotary embedding).
void read_generic_rope(const Reader& r, ModelSpec& s, double default_theta,
                       std::optional<double> default_partial_rotary, bool class_has_layer_types = true) {
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
  if (nested) r.error(key, "is nested by layer type, but {} has one RoPE for all layers", architecture_name(s.arch));

  standardize(params);
  if (top_original > 0) params["original_max_position_embeddings"] = top_original;
  const Reader pr(params, r.file(), r.subject(key) + ".");
  s.rope = read_rope(pr, s.context_length, true);
  fit_rope_to_head(pr, r, s, s.rope, s.head_dim, "head_dim", has_attention(s));
}

// Sliding window shared by the Qwen 2/3 family: `sliding_window` only counts when
// `use_sliding_window` is true, and then layers from `max_window_layers` on slide.
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

// ---------------------------------------------------------------------------
// Per-class readers. Defaults are copied from transformers 5.x
// models/<type>/configuration_<type>.py.
// ---------------------------------------------------------------------------

ModelSpec read_llama(const Reader& r) {
  static const ClassDefaults d{
      "LlamaForCausalLM", 32000, 4096, 11008, 32, 32, std::nullopt, true, ClassDefaults::HeadDim::NullableField, 0,
      2048, "rms_norm_eps", 1e-6, "hidden_act", "silu", 1, 2, false, true};
  ModelSpec s;
  s.arch = Architecture::Llama;
  read_common(r, d, s);
  if (r.boolean("mlp_bias", false)) r.error("mlp_bias", "true is not supported (ModelSpec has no MLP biases)");
  s.attention_bias = r.boolean("attention_bias", false);
  s.layer_types.assign(static_cast<size_t>(s.num_layers), LayerKind::FullAttention);
  read_generic_rope(r, s, 10000.0, std::nullopt, /*class_has_layer_types=*/false);
  return s;
}

ModelSpec read_qwen2(const Reader& r) {
  static const ClassDefaults d{
      "Qwen2ForCausalLM", 151936, 4096, 22016, 32, 32, 32, true, ClassDefaults::HeadDim::Extra, 0,
      32768, "rms_norm_eps", 1e-6, "hidden_act", "silu", std::nullopt, std::nullopt, false, false};
  ModelSpec s;
  s.arch = Architecture::Qwen2;
  read_common(r, d, s);
  s.attention_bias = true;  // Qwen2Attention always builds q/k/v with bias=True
  read_qwen_layers(r, s);
  read_generic_rope(r, s, 10000.0, std::nullopt);
  return s;
}

ModelSpec read_qwen3(const Reader& r) {
  static const ClassDefaults d{
      "Qwen3ForCausalLM", 151936, 4096, 22016, 32, 32, 32, true, ClassDefaults::HeadDim::Field, 128,
      32768, "rms_norm_eps", 1e-6, "hidden_act", "silu", std::nullopt, std::nullopt, false, false};
  ModelSpec s;
  s.arch = Architecture::Qwen3;
  read_common(r, d, s);
  s.qk_norm = true;
  s.attention_bias = r.boolean("attention_bias", false);
  read_qwen_layers(r, s);
  read_generic_rope(r, s, 10000.0, std::nullopt);
  return s;
}

// Qwen 3.5: gated delta-net layers ("linear_attention") with full-attention
// layers every `full_attention_interval`-th layer; RMSNorm is x̂·(1 + w); the
// attention q_proj also produces an output gate; RoPE rotates 1/4 of head_dim
// unless told otherwise. mrope_section / mrope_interleaved only matter for
// image/video positions; for text all three position streams are equal.
ModelSpec read_qwen3_5(const Reader& r) {
  static const ClassDefaults d{
      "Qwen3_5ForCausalLM", 248320, 4096, 12288, 32, 16, 4, false, ClassDefaults::HeadDim::Field, 256,
      32768, "rms_norm_eps", 1e-6, "hidden_act", "silu", std::nullopt, std::nullopt, false, false};
  ModelSpec s;
  s.arch = Architecture::Qwen3_5;
  read_common(r, d, s);
  s.qk_norm = true;
  s.norm_weight_plus_one = true;
  s.attention_bias = r.boolean("attention_bias", false);
  s.linear_conv_kernel = r.size("linear_conv_kernel_dim", 4);
  s.linear_key_head_dim = r.size("linear_key_head_dim", 128);
  s.linear_value_head_dim = r.size("linear_value_head_dim", 128);
  s.linear_num_key_heads = r.size("linear_num_key_heads", 16);
  s.linear_num_value_heads = r.size("linear_num_value_heads", 32);
  if (s.linear_num_value_heads % s.linear_num_key_heads != 0)
    r.error("linear_num_value_heads", "{} is not a multiple of linear_num_key_heads {}", s.linear_num_value_heads,
            s.linear_num_key_heads);
  const std::map<std::string, LayerKind> allowed = {{"full_attention", LayerKind::FullAttention},
                                                    {"linear_attention", LayerKind::LinearAttention}};
  if (auto lt = read_layer_types(r, s.num_layers, allowed)) {
    s.layer_types = std::move(*lt);
  } else {
    const int64_t interval = r.size("full_attention_interval", 4);
    for (int64_t i = 0; i < s.num_layers; ++i)
      s.layer_types.push_back((i + 1) % interval != 0 ? LayerKind::LinearAttention : LayerKind::FullAttention);
  }
  read_generic_rope(r, s, 10000.0, 0.25);
  return s;
}

// Gemma 3: RMSNorm x̂·(1 + w), embeddings × √hidden_size, q/k norms, attention
// scale query_pre_attn_scalar^-½, five sliding layers per full one by default, and
// separate RoPE for sliding layers (rope_local_base_freq, 10k) and full layers (1M,
// possibly linearly scaled).
ModelSpec read_gemma3(const Reader& r) {
  static const ClassDefaults d{
      "Gemma3ForCausalLM", 262208, 2304, 9216, 26, 8, 4, false, ClassDefaults::HeadDim::Field, 256,
      131072, "rms_norm_eps", 1e-6, "hidden_activation", "gelu_pytorch_tanh", 2, 1, true, true};
  ModelSpec s;
  s.arch = Architecture::Gemma3;
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
ModelSpec read_gemma4(const Reader& r) {
  static const ClassDefaults d{
      "Gemma4ForCausalLM", 262144, 2304, 9216, 30, 8, 4, false, ClassDefaults::HeadDim::Field, 256,
      131072, "rms_norm_eps", 1e-6, "hidden_activation", "gelu_pytorch_tanh", 2, 1, true, false};
  ModelSpec s;
  s.arch = Architecture::Gemma4;
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

// LFM2: gated short-convolution blocks ("conv") and GQA attention blocks with
// q/k layer norms. The feed-forward width is adjusted as in Lfm2MLP:
//   ff = int(2·ff/3); ff = int(multiplier·ff); ff = multiple_of·ceil(ff/multiple_of).
ModelSpec read_lfm2(const Reader& r) {
  static const ClassDefaults d{
      "Lfm2ForCausalLM", 65536, 2560, 12288, 32, 32, 8, false, ClassDefaults::HeadDim::Extra, 0,
      128000, "norm_eps", 1e-5, nullptr, "silu", 1, 2, true, false};
  ModelSpec s;
  s.arch = Architecture::Lfm2;
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

using TextReader = ModelSpec (*)(const Reader&);

struct Wrapper {
  const char* text_type;
  TextReader read;
  const char* class_name;
  bool tie_default;
};

// Multimodal configs: the decoder comes from `text_config`; lm_head tying, the
// generation token ids (outer ones first) and `architectures` from the outer config.
ModelSpec read_wrapper(const Reader& top, const Wrapper& w) {
  static const json empty = json::object();
  const json* tc = top.find("text_config");
  const json& text = (tc == nullptr || tc->is_null()) ? empty : *tc;
  if (!text.is_object()) top.error("text_config", "must be an object, got {}", shown(text));
  const Reader r(text, top.file(), "text_config.");
  if (r.present("model_type") && r.string("model_type", "") != w.text_type)
    r.error("model_type", "must be '{}', got '{}'", w.text_type, r.string("model_type", ""));
  ModelSpec s = w.read(r);
  s.source_architecture = source_architecture(top, w.class_name);
  s.tie_word_embeddings = top.boolean("tie_word_embeddings", w.tie_default);
  if (top.present_non_null("bos_token_id")) {
    const int64_t bos = top.integer("bos_token_id", -1);
    s.bos_token_id = bos >= 0 ? bos : -1;
  }
  if (top.present_non_null("eos_token_id")) s.eos_token_ids = parse_eos(top, *top.find("eos_token_id"), "eos_token_id");
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

std::string resolve(const std::string& path, const char* file_name) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return (std::filesystem::path(path) / file_name).string();
  return path;
}

}  // namespace

ModelSpec spec_from_hf_config(const json& config, const std::string& file) {
  if (!config.is_object()) fail(file, "", "config must be a JSON object, got {}", config.type_name());
  const Reader top(config, file, "");
  if (!top.present("model_type")) top.error("model_type", "missing");
  const std::string type = top.string("model_type", "");
  if (type == "llama") return read_llama(top);
  if (type == "qwen2") return read_qwen2(top);
  if (type == "qwen3") return read_qwen3(top);
  if (type == "qwen3_5_text") return read_qwen3_5(top);
  if (type == "gemma3_text") return read_gemma3(top);
  if (type == "gemma4_text") return read_gemma4(top);
  if (type == "lfm2") return read_lfm2(top);
  if (type == "gemma3")
    return read_wrapper(top, {"gemma3_text", read_gemma3, "Gemma3ForConditionalGeneration", true});
  if (type == "qwen3_5")
    return read_wrapper(top, {"qwen3_5_text", read_qwen3_5, "Qwen3_5ForConditionalGeneration", false});
  if (type == "gemma4")
    return read_wrapper(top, {"gemma4_text", read_gemma4, "Gemma4ForConditionalGeneration", true});
  top.error("model_type",
            "unsupported model type '{}' (supported: llama, qwen2, qwen3, qwen3_5, qwen3_5_text, gemma3, "
            "gemma3_text, gemma4, gemma4_text, lfm2)",
            type);
}

ModelSpec spec_from_hf_config_file(const std::string& path) {
  const std::string file = resolve(path, "config.json");
  return spec_from_hf_config(load_json(file), file);
}

std::optional<std::vector<int64_t>> hf_generation_eos_token_ids(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = (std::filesystem::path(path) / "generation_config.json").string();
  } else if (std::filesystem::path(path).filename() != "generation_config.json") {
    file = (std::filesystem::path(path).parent_path() / "generation_config.json").string();
  }
  if (!std::filesystem::exists(file, ec)) return std::nullopt;
  const json j = load_json(file);
  if (!j.is_object()) fail(file, "", "must be a JSON object, got {}", j.type_name());
  const Reader r(j, file, "");
  const json* v = r.find("eos_token_id");
  if (v == nullptr || v->is_null()) return std::nullopt;
  return parse_eos(r, *v, "eos_token_id");
}

}  // namespace tessera

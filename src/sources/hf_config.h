// The toolkit for reading a Hugging Face config.json the way transformers does:
// typed field access with a class's defaults (Reader), the fields every
// supported text config shares (read_common), layer_types, RoPE parameters in
// all their spellings, and the error conventions. Each architecture's own
// reader (src/model/<arch>/config.cc) is built from these; spec_from_hf_config
// (model/architectures.h) picks the reader by `model_type`.
//
// The ground truth is transformers 5.x: each supported `model_type` is read the
// way its `configuration_<type>.py` reads it, including the class defaults for
// missing fields (they differ per class: e.g. tie_word_embeddings is false for
// Llama/Qwen and true for Gemma/LFM2), the legacy spellings (`rope_theta` and
// `rope_scaling` next to `rope_parameters`), and the derived values (head_dim =
// hidden_size / num_attention_heads when absent, num_key_value_heads =
// num_attention_heads when null, default layer_types). Where the model
// transformers builds differs from its config, the spec describes the model.
// Configs whose model transformers cannot build are errors.
// tests/python/test_hf_config_parity.py checks this against transformers.
//
// Every problem is an Error naming the field (`text_config.` prefixed when nested):
// wrong JSON type, non-positive size, heads that do not divide hidden_size when
// head_dim is derived, layer_types of the wrong length or kind, a RoPE type missing
// its required keys, and features the ModelSpec cannot express.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/model_spec.h"

namespace tessera {

// eos ids of a sibling generation_config.json (`path` is a model directory,
// its config.json, or the generation_config.json itself), which is what
// transformers' generate() stops on; nullopt when the file or its eos_token_id
// is absent. The ModelSpec itself keeps config.json's ids, as transformers'
// model config does.
std::optional<std::vector<int64_t>> hf_generation_eos_token_ids(const std::string& path);

namespace hf {

// Bounds that keep a hostile config from asking for absurd allocations downstream:
// every size fits in 31 bits (so products of two sizes fit in int64), and the
// layer count stays small enough that a per-layer vector is cheap.
constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxLayers = int64_t{1} << 16;
constexpr uint64_t kMaxConfigBytes = 64ull << 20;

// A JSON value for an error message, cut to 80 characters.
std::string shown(const nlohmann::json& v);

// A JSON file of at most kMaxConfigBytes; Error naming `path` otherwise.
nlohmann::json load_json(const std::string& path);

// Typed access to one JSON object (the config, its text_config, or a RoPE
// parameter dict). Missing keys take the caller's default, as a transformers
// config class does; a present key must have the class's declared type.
class Reader {
 public:
  Reader(const nlohmann::json& j, const std::string& file, std::string prefix)
      : j_(j), file_(file), prefix_(std::move(prefix)) {}

  const std::string& file() const { return file_; }
  std::string subject(std::string_view key) const { return prefix_ + std::string(key); }

  const nlohmann::json* find(std::string_view key) const {
    const auto it = j_.find(std::string(key));
    return it == j_.end() ? nullptr : &*it;
  }
  bool present(std::string_view key) const { return find(key) != nullptr; }
  bool present_non_null(std::string_view key) const {
    const nlohmann::json* v = find(key);
    return v != nullptr && !v->is_null();
  }

  template <typename... Args>
  [[noreturn]] void error(std::string_view key, fmt::format_string<Args...> problem, Args&&... args) const {
    fail(file_, subject(key), problem, std::forward<Args>(args)...);
  }

  // int field: missing -> def; null -> nullopt when nullable, else an error.
  std::optional<int64_t> nullable_integer(std::string_view key, std::optional<int64_t> def) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return def;
    if (v->is_null()) return std::nullopt;
    return as_integer(key, *v);
  }
  int64_t integer(std::string_view key, int64_t def) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return def;
    return as_integer(key, *v);
  }
  int64_t as_integer(std::string_view key, const nlohmann::json& v) const {
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
    const nlohmann::json* v = find(key);
    if (v == nullptr) return def;
    if (v->is_null()) return std::nullopt;
    return as_number(key, *v);
  }
  double number(std::string_view key, double def) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return def;
    return as_number(key, *v);
  }
  double as_number(std::string_view key, const nlohmann::json& v) const {
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
    const nlohmann::json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_boolean()) error(key, "must be true or false, got {}", shown(*v));
    return v->get<bool>();
  }

  std::string string(std::string_view key, const std::string& def) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_string()) error(key, "must be a string, got {}", shown(*v));
    return v->get<std::string>();
  }

 private:
  const nlohmann::json& j_;
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

Activation parse_activation(const Reader& r, const char* key, const char* def);
std::vector<int64_t> parse_eos(const Reader& r, const nlohmann::json& v, std::string_view key);
void read_token_ids(const Reader& r, const ClassDefaults& d, ModelSpec& s);
// architectures[0], or `def` when the list is absent, null or empty.
std::string source_architecture(const Reader& r, const char* def);

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
void check_per_layer_config(const Reader& r, const ModelSpec& s, LayerGeometry* geometry = nullptr);

// The fields shared by every class: sizes, heads, head_dim, norm eps, activation,
// tokens, tying. `per_layer_config` is checked here unless the class reads it
// itself (Gemma 4).
void read_common(const Reader& r, const ClassDefaults& d, ModelSpec& s, bool check_per_layer = true);

// layer_types, with transformers' legacy renames ("attention" -> "full_attention",
// "mamba" -> "linear_attention"); every entry must be one the class supports and
// there must be one per layer. nullopt when absent.
std::optional<std::vector<LayerKind>> read_layer_types(const Reader& r, int64_t num_layers,
                                                       const std::map<std::string, LayerKind>& allowed);
bool has_kind(const std::vector<LayerKind>& kinds, LayerKind k);
// The rope_parameters key of a layer type ("full_attention", "sliding_attention").
const char* rope_layer_key(LayerKind k);
bool has_attention(const ModelSpec& s);

// One standardized RoPE dict (see the .cc for the frequency formulas).
// `max_positions` stands in for a missing original_max_position_embeddings.
RopeSpec read_rope(const Reader& r, int64_t max_positions, bool fill_original_max);
// What the modeling code does with the RoPE of layers whose heads are
// `head_dim` wide (`head_key` names that size in errors); `applied`: some
// layer uses this RoPE; `partial_rotary`: the attention rotates only the
// partial_rotary_factor part of each head (Qwen 3.5).
void fit_rope_to_head(const Reader& rope_reader, const Reader& r, const ModelSpec& s, RopeSpec& rope,
                      int64_t head_dim, const char* head_key, bool applied, bool partial_rotary = false);
// The RoPE of a class that keeps transformers' generic convert_rope_params_to_dict:
// `rope_scaling` (legacy) wins over `rope_parameters`; top-level `rope_theta` and
// `partial_rotary_factor` fill keys the dict lacks. Sets s.rope.
// `default_partial_rotary`: the class's partial_rotary_factor default, for a
// class whose attention rotates only that part of each head (Qwen 3.5);
// nullopt: the attention rotates the whole head.
void read_generic_rope(const Reader& r, ModelSpec& s, double default_theta,
                       std::optional<double> default_partial_rotary, bool class_has_layer_types = true);
// Sliding window shared by the Qwen 2/3 family: `sliding_window` only counts when
// `use_sliding_window` is true, and then layers from `max_window_layers` on slide.
void read_qwen_layers(const Reader& r, ModelSpec& s);

// The decoder of a multimodal config: `text_config` must have `text_type` (when
// it names one) and is read by `read`; lm_head tying (class default
// `tie_default`), the generation token ids (outer ones first) and
// `architectures` (default `class_name`) come from the outer config.
ModelSpec read_text_config(const Reader& top, const char* text_type, ModelSpec (*read)(const Reader&),
                           const char* class_name, bool tie_default);

}  // namespace hf
}  // namespace tessera

#include "core/model_spec_json.h"

#include <fmt/format.h>

#include "core/error.h"

namespace tessera {
namespace {

nlohmann::json rope_to_json(const RopeSpec& r) {
  nlohmann::json scaling = {
      {"type", r.scaling.type},
      {"factor", r.scaling.factor},
      {"low_freq_factor", r.scaling.low_freq_factor},
      {"high_freq_factor", r.scaling.high_freq_factor},
      {"original_max_position_embeddings", r.scaling.original_max_position_embeddings},
      {"beta_fast", r.scaling.beta_fast},
      {"beta_slow", r.scaling.beta_slow},
  };
  if (r.scaling.attention_factor) scaling["attention_factor"] = *r.scaling.attention_factor;
  return {{"theta", r.theta},
          {"partial_rotary_factor", r.partial_rotary_factor},
          {"neox_style", r.neox_style},
          {"scaling", scaling}};
}

}  // namespace

nlohmann::json model_spec_to_json(const ModelSpec& s) {
  nlohmann::json layer_types = nlohmann::json::array();
  for (LayerKind k : s.layer_types) layer_types.push_back(layer_kind_name(k));
  nlohmann::json j = {
      {"arch", s.arch},
      {"source_architecture", s.source_architecture},
      {"vocab_size", s.vocab_size},
      {"hidden_size", s.hidden_size},
      {"intermediate_size", s.intermediate_size},
      {"num_layers", s.num_layers},
      {"num_heads", s.num_heads},
      {"num_kv_heads", s.num_kv_heads},
      {"head_dim", s.head_dim},
      {"context_length", s.context_length},
      {"norm_eps", s.norm_eps},
      {"norm_weight_plus_one", s.norm_weight_plus_one},
      {"qk_norm", s.qk_norm},
      {"v_norm", s.v_norm},
      {"attention_bias", s.attention_bias},
      {"tie_word_embeddings", s.tie_word_embeddings},
      {"scale_embeddings", s.scale_embeddings},
      {"activation", activation_name(s.activation)},
      {"rope", rope_to_json(s.rope)},
      {"rope_local", s.rope_local ? rope_to_json(*s.rope_local) : nlohmann::json(nullptr)},
      {"layer_types", layer_types},
      {"sliding_window", s.sliding_window},
      {"attn_logit_softcap", s.attn_logit_softcap},
      {"final_logit_softcap", s.final_logit_softcap},
      {"query_pre_attn_scalar", s.query_pre_attn_scalar},
      {"bos_token_id", s.bos_token_id},
      {"eos_token_ids", s.eos_token_ids},
      {"conv_kernel", s.conv_kernel},
      {"linear_num_key_heads", s.linear_num_key_heads},
      {"linear_num_value_heads", s.linear_num_value_heads},
      {"linear_key_head_dim", s.linear_key_head_dim},
      {"linear_value_head_dim", s.linear_value_head_dim},
      {"linear_conv_kernel", s.linear_conv_kernel},
      {"hidden_size_per_layer_input", s.hidden_size_per_layer_input},
      {"global_head_dim", s.global_head_dim},
      {"global_num_kv_heads", s.global_num_kv_heads},
      {"num_kv_shared_layers", s.num_kv_shared_layers},
      {"attention_k_eq_v", s.attention_k_eq_v},
      {"double_wide_mlp", s.double_wide_mlp},
  };
  return j;
}

namespace {

class SpecReader {
 public:
  SpecReader(const nlohmann::json& j, const std::string& file, std::string prefix)
      : j_(j), file_(file), prefix_(std::move(prefix)) {
    if (!j_.is_object()) fail(file_, prefix_.empty() ? "spec" : prefix_, "must be a JSON object");
  }
  const nlohmann::json& at(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(file_, prefix_ + key, "missing");
    return *it;
  }
  int64_t i64(const char* key) const {
    const auto& v = at(key);
    if (!v.is_number_integer()) fail(file_, prefix_ + key, "must be an integer");
    return v.get<int64_t>();
  }
  double f64(const char* key) const {
    const auto& v = at(key);
    if (!v.is_number()) fail(file_, prefix_ + key, "must be a number");
    return v.get<double>();
  }
  bool boolean(const char* key) const {
    const auto& v = at(key);
    if (!v.is_boolean()) fail(file_, prefix_ + key, "must be true or false");
    return v.get<bool>();
  }
  std::string str(const char* key) const {
    const auto& v = at(key);
    if (!v.is_string()) fail(file_, prefix_ + key, "must be a string");
    return v.get<std::string>();
  }
  template <typename E>
  E named(const char* key, std::initializer_list<E> all, const char* (*name)(E)) const {
    const std::string v = str(key);
    for (E e : all)
      if (v == name(e)) return e;
    fail(file_, prefix_ + key, "unknown value '{}'", v);
  }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json& j_;
  const std::string& file_;
  std::string prefix_;
};

RopeSpec rope_from_json(const nlohmann::json& j, const std::string& file, const std::string& key) {
  SpecReader r(j, file, key + ".");
  RopeSpec rope;
  rope.theta = r.f64("theta");
  rope.partial_rotary_factor = r.f64("partial_rotary_factor");
  rope.neox_style = r.boolean("neox_style");
  SpecReader s(r.at("scaling"), file, key + ".scaling.");
  rope.scaling.type = s.str("type");
  rope.scaling.factor = s.f64("factor");
  rope.scaling.low_freq_factor = s.f64("low_freq_factor");
  rope.scaling.high_freq_factor = s.f64("high_freq_factor");
  rope.scaling.original_max_position_embeddings = s.i64("original_max_position_embeddings");
  rope.scaling.beta_fast = s.f64("beta_fast");
  rope.scaling.beta_slow = s.f64("beta_slow");
  if (r.at("scaling").contains("attention_factor")) rope.scaling.attention_factor = s.f64("attention_factor");
  return rope;
}

}  // namespace

ModelSpec model_spec_from_json(const nlohmann::json& j, const std::string& file) {
  SpecReader r(j, file, "spec.");
  ModelSpec s;
  s.arch = r.str("arch");  // a registered architecture: checked when its programs are built
  s.source_architecture = r.str("source_architecture");
  s.vocab_size = r.i64("vocab_size");
  s.hidden_size = r.i64("hidden_size");
  s.intermediate_size = r.i64("intermediate_size");
  s.num_layers = r.i64("num_layers");
  s.num_heads = r.i64("num_heads");
  s.num_kv_heads = r.i64("num_kv_heads");
  s.head_dim = r.i64("head_dim");
  s.context_length = r.i64("context_length");
  s.norm_eps = r.f64("norm_eps");
  s.norm_weight_plus_one = r.boolean("norm_weight_plus_one");
  s.qk_norm = r.boolean("qk_norm");
  s.v_norm = r.boolean("v_norm");
  s.attention_bias = r.boolean("attention_bias");
  s.tie_word_embeddings = r.boolean("tie_word_embeddings");
  s.scale_embeddings = r.boolean("scale_embeddings");
  s.activation = r.named("activation", {Activation::SiLU, Activation::GeluTanh, Activation::Gelu}, activation_name);
  s.rope = rope_from_json(r.at("rope"), file, "spec.rope");
  if (!r.at("rope_local").is_null()) s.rope_local = rope_from_json(r.at("rope_local"), file, "spec.rope_local");
  const nlohmann::json& types = r.at("layer_types");
  if (!types.is_array()) fail(file, "spec.layer_types", "must be an array");
  for (const auto& t : types) {
    if (!t.is_string()) fail(file, "spec.layer_types", "entries must be strings");
    bool found = false;
    for (LayerKind k : {LayerKind::FullAttention, LayerKind::SlidingAttention, LayerKind::LinearAttention,
                        LayerKind::ShortConv})
      if (t.get<std::string>() == layer_kind_name(k)) {
        s.layer_types.push_back(k);
        found = true;
      }
    if (!found) fail(file, "spec.layer_types", "unknown layer type '{}'", t.get<std::string>());
  }
  s.sliding_window = r.i64("sliding_window");
  s.attn_logit_softcap = r.f64("attn_logit_softcap");
  s.final_logit_softcap = r.f64("final_logit_softcap");
  s.query_pre_attn_scalar = r.f64("query_pre_attn_scalar");
  s.bos_token_id = r.i64("bos_token_id");
  const nlohmann::json& eos = r.at("eos_token_ids");
  if (!eos.is_array()) fail(file, "spec.eos_token_ids", "must be an array");
  for (const auto& e : eos) {
    if (!e.is_number_integer()) fail(file, "spec.eos_token_ids", "entries must be integers");
    s.eos_token_ids.push_back(e.get<int64_t>());
  }
  s.conv_kernel = r.i64("conv_kernel");
  s.linear_num_key_heads = r.i64("linear_num_key_heads");
  s.linear_num_value_heads = r.i64("linear_num_value_heads");
  s.linear_key_head_dim = r.i64("linear_key_head_dim");
  s.linear_value_head_dim = r.i64("linear_value_head_dim");
  s.linear_conv_kernel = r.i64("linear_conv_kernel");
  s.hidden_size_per_layer_input = r.i64("hidden_size_per_layer_input");
  s.global_head_dim = r.i64("global_head_dim");
  s.global_num_kv_heads = r.i64("global_num_kv_heads");
  s.num_kv_shared_layers = r.i64("num_kv_shared_layers");
  s.attention_k_eq_v = r.boolean("attention_k_eq_v");
  s.double_wide_mlp = r.boolean("double_wide_mlp");
  if (static_cast<int64_t>(s.layer_types.size()) != s.num_layers)
    fail(file, "spec.layer_types", "{} entries for {} layers", s.layer_types.size(), s.num_layers);
  return s;
}

}  // namespace tessera

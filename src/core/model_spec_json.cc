#include "core/model_spec_json.h"

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
      {"arch", architecture_name(s.arch)},
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

}  // namespace tessera

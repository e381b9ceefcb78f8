// Hugging Face config.json -> ModelSpec.
//
// The ground truth is transformers 5.x: each supported `model_type` is read the
// way its `configuration_<type>.py` reads it, including the class defaults for
// missing fields (they differ per class: e.g. tie_word_embeddings is false for
// Llama/Qwen and true for Gemma/LFM2), the legacy spellings (`rope_theta` and
// `rope_scaling` next to `rope_parameters`, Gemma 3 `rope_local_base_freq` and
// `sliding_window_pattern`, LFM2 `full_attn_idxs`, `block_ff_dim`, `tie_embedding`),
// and the derived values (head_dim = hidden_size / num_attention_heads when absent,
// num_key_value_heads = num_attention_heads when null, default layer_types). Where
// the model transformers builds differs from its config, the spec describes the
// model: e.g. 'default' RoPE covers the whole head except in Qwen 3.5, and Gemma 4
// full-attention layers have their own head size and KV heads (global_head_dim,
// per_layer_config). Configs whose model transformers cannot build (cos/sin
// narrower than the head, KV heads that do not divide the query heads, ...) are
// errors. tests/python/test_hf_config_parity.py checks all of this against
// transformers on named and random configs.
//
// Supported model_type values: llama, qwen2, qwen3, qwen3_5_text, qwen3_5 (text part
// of the multimodal config), gemma3_text, gemma3 (text part), gemma4_text, gemma4
// (text part), lfm2. For the multimodal wrappers the decoder is read from
// `text_config`; tie_word_embeddings, bos/eos and `architectures` come from the
// outer config (the outer model owns lm_head; generation reads outer ids first).
//
// Every problem is an Error naming the field (`text_config.` prefixed when nested):
// wrong JSON type, non-positive size, heads that do not divide hidden_size when
// head_dim is derived, layer_types of the wrong length or kind, a RoPE type missing
// its required keys, and features the ModelSpec cannot express (see the .cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model_spec.h"

namespace tessera {

// `file` names the source in error messages.
ModelSpec spec_from_hf_config(const nlohmann::json& config, const std::string& file);

// `path` is a config.json file or a model directory containing one.
ModelSpec spec_from_hf_config_file(const std::string& path);

// eos ids of a sibling generation_config.json (`path` as above, or the
// generation_config.json itself), which is what transformers' generate() stops
// on; nullopt when the file or its eos_token_id is absent. The ModelSpec itself
// keeps config.json's ids, as transformers' model config does.
std::optional<std::vector<int64_t>> hf_generation_eos_token_ids(const std::string& path);

}  // namespace tessera

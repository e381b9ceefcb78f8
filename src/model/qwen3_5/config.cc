// Qwen 3.5: its Hugging Face config class and its GGUF metadata, read into a ModelSpec.
#include "model/qwen3_5/qwen3_5.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tessera::model::qwen3_5 {

using namespace tessera::hf;
using nlohmann::json;

// Qwen 3.5: gated delta-net layers ("linear_attention") with full-attention
// layers every `full_attention_interval`-th layer; RMSNorm is x̂·(1 + w); the
// attention q_proj also produces an output gate; RoPE rotates 1/4 of head_dim
// unless told otherwise. mrope_section / mrope_interleaved only matter for
// image/video positions; for text all three position streams are equal.
ModelSpec read_hf_config(const Reader& r) {
  static const ClassDefaults d{
      "Qwen3_5ForCausalLM", 248320, 4096, 12288, 32, 16, 4, false, ClassDefaults::HeadDim::Field, 256,
      32768, "rms_norm_eps", 1e-6, "hidden_act", "silu", std::nullopt, std::nullopt, false, false};
  ModelSpec s;
  s.arch = unit.name;
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

ModelSpec read_gguf(const GgufMetadataReader& r) {
  GgufCommon c = read_gguf_common(r, {.trailing_blocks_key = "nextn_predict_layers"});
  ModelSpec& spec = c.spec;
  const int64_t L = spec.num_layers;
  const int64_t blocks = c.blocks;
  // Qwen 3.5 (llama.cpp's Qwen3_5TextModel converter, qwen35 loader): RMSNorm
  // x̂·(1 + w) (the file stores 1 + w, undone on load), q/k norms, a gated
  // q projection, and gated delta-net layers whose geometry travels in the
  // Mamba-style ssm.* keys:
  //   ssm.conv_kernel     linear_conv_kernel_dim
  //   ssm.state_size      linear_key_head_dim
  //   ssm.group_count     linear_num_key_heads
  //   ssm.time_step_rank  linear_num_value_heads
  //   ssm.inner_size      linear_value_head_dim · linear_num_value_heads
  // RoPE: rope.dimension_count = int(head_dim · partial_rotary_factor) dims
  // rotated in halves (read above). rope.dimension_sections split them among
  // the multimodal position streams, which are equal for text: not needed.
  spec.qk_norm = true;
  spec.norm_weight_plus_one = true;
  spec.linear_conv_kernel = r.req_int("ssm.conv_kernel", 1, 1 << 16);
  spec.linear_key_head_dim = r.req_int("ssm.state_size");
  spec.linear_num_key_heads = r.req_int("ssm.group_count");
  spec.linear_num_value_heads = r.req_int("ssm.time_step_rank");
  const int64_t inner = r.req_int("ssm.inner_size");
  if (inner % spec.linear_num_value_heads != 0)
    r.bad(r.key("ssm.inner_size"), fmt::format("{} is not a multiple of {} value heads (ssm.time_step_rank)",
                                               inner, spec.linear_num_value_heads));
  spec.linear_value_head_dim = inner / spec.linear_num_value_heads;
  if (spec.linear_num_value_heads % spec.linear_num_key_heads != 0)
    r.bad(r.key("ssm.time_step_rank"),
          fmt::format("{} value heads are not a multiple of {} key heads (ssm.group_count)",
                      spec.linear_num_value_heads, spec.linear_num_key_heads));
  // Layer kinds: attention.recurrent_layers, one bool per block (true: gated
  // delta-net; the prediction blocks after the decoder are false), else every
  // full_attention_interval-th layer is full attention (llama.cpp's default 4).
  if (auto recurrent = r.opt_bool_per_layer("attention.recurrent_layers", blocks)) {
    for (int64_t i = 0; i < L; ++i)
      if ((*recurrent)[static_cast<size_t>(i)]) spec.layer_types[static_cast<size_t>(i)] = LayerKind::LinearAttention;
  } else {
    const int64_t interval = r.opt_int("full_attention_interval", 1, kGgufMaxLayers).value_or(4);
    for (int64_t i = 0; i < L; ++i)
      if ((i + 1) % interval != 0) spec.layer_types[static_cast<size_t>(i)] = LayerKind::LinearAttention;
  }
  finish_gguf_spec(r, spec);
  return spec;
}

}  // namespace tessera::model::qwen3_5

#include "model/qwen3_5/qwen3_5.h"

namespace tessera::model::qwen3_5 {

// The gated delta-net is stored under Mamba's ssm_* names; the post-attention
// norm is its pre-MLP norm, stored after attention.
const ArchitectureUnit unit = {
    .name = "qwen3_5",
    .hf_model_type = "qwen3_5_text",
    .read_hf_config = read_hf_config,
    .hf_wrapper = ArchitectureUnit::HfWrapper{"qwen3_5", "Qwen3_5ForConditionalGeneration", false},
    .gguf_architecture = "qwen35",
    .read_gguf = read_gguf,
    .gguf_tensors = {.layer_names = {{"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
                                     {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
                                     {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
                                     {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
                                     {"linear_attn.A_log", "ssm_a"},
                                     {"linear_attn.dt_bias", "ssm_dt.bias"},
                                     {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
                                     {"linear_attn.norm.weight", "ssm_norm.weight"},
                                     {"linear_attn.out_proj.weight", "ssm_out.weight"},
                                     {"post_attention_layernorm.weight", "post_attention_norm.weight"}},
                     .restore = restore_tensor,
                     .stored_rows = stored_rows},
    .build_layer = build_layer,
    .layer_kinds = {LayerKind::FullAttention, LayerKind::SlidingAttention, LayerKind::LinearAttention},
};

}  // namespace tessera::model::qwen3_5

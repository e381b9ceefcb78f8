#include "model/lfm2/lfm2.h"

namespace tessera::model::lfm2 {

// The final norm keeps the name of where the original model applied it
// (llama.cpp: LLM_TENSOR_OUTPUT_NORM_LFM2).
const ArchitectureUnit unit = {
    .name = "lfm2",
    .hf_model_type = "lfm2",
    .read_hf_config = read_hf_config,
    .gguf_architecture = "lfm2",
    .read_gguf = read_gguf,
    .gguf_tensors = {.names = {{"model.embedding_norm.weight", "token_embd_norm.weight"}},
                     .layer_names = {{"operator_norm.weight", "attn_norm.weight"},
                                     {"ffn_norm.weight", "ffn_norm.weight"},
                                     {"self_attn.out_proj.weight", "attn_output.weight"},
                                     {"self_attn.q_layernorm.weight", "attn_q_norm.weight"},
                                     {"self_attn.k_layernorm.weight", "attn_k_norm.weight"},
                                     {"conv.conv.weight", "shortconv.conv.weight"},
                                     {"conv.in_proj.weight", "shortconv.in_proj.weight"},
                                     {"conv.out_proj.weight", "shortconv.out_proj.weight"},
                                     {"feed_forward.w1.weight", "ffn_gate.weight"},
                                     {"feed_forward.w3.weight", "ffn_up.weight"},
                                     {"feed_forward.w2.weight", "ffn_down.weight"}}},
    .build_layer = build_layer,
    .layer_kinds = {LayerKind::FullAttention, LayerKind::SlidingAttention, LayerKind::ShortConv},
    .final_norm = "model.embedding_norm.weight",
};

}  // namespace tessera::model::lfm2

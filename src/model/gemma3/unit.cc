#include "model/gemma3/gemma3.h"

namespace tessera::model::gemma3 {

namespace {

// llama.cpp's converter stores every Gemma 3 norm weight as 1 + w.
bool stored_plus_one(const std::string& g) { return ends_with(g, "norm.weight"); }

void restore(const ModelSpec&, const std::string& g, F32Tensor& t, const std::string&) {
  if (stored_plus_one(g)) subtract_one(t);
}

std::optional<std::vector<int64_t>> stored_rows(const ModelSpec&, const std::string& g, const TensorView&) {
  if (stored_plus_one(g)) return std::nullopt;
  return std::vector<int64_t>{};
}

}  // namespace

const ArchitectureUnit unit = {
    .name = "gemma3",
    .hf_model_type = "gemma3_text",
    .read_hf_config = read_hf_config,
    .hf_wrapper = ArchitectureUnit::HfWrapper{"gemma3", "Gemma3ForConditionalGeneration", true},
    .gguf_architecture = "gemma3",
    .read_gguf = read_gguf,
    .gguf_tensors = {.layer_names = {{"post_attention_layernorm.weight", "post_attention_norm.weight"}},
                     .restore = restore,
                     .stored_rows = stored_rows},
    .build_layer = build_layer,
    .builtin_chat_template = kChatTemplate,
};

}  // namespace tessera::model::gemma3

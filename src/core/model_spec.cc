#include "core/model_spec.h"

namespace tessera {

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::Llama: return "llama";
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Qwen3_5: return "qwen3_5";
    case Architecture::Gemma3: return "gemma3";
    case Architecture::Gemma4: return "gemma4";
    case Architecture::Lfm2: return "lfm2";
  }
  return "?";
}

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::FullAttention: return "full_attention";
    case LayerKind::SlidingAttention: return "sliding_attention";
    case LayerKind::LinearAttention: return "linear_attention";
    case LayerKind::ShortConv: return "conv";
  }
  return "?";
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::SiLU: return "silu";
    case Activation::GeluTanh: return "gelu_pytorch_tanh";
    case Activation::Gelu: return "gelu";
  }
  return "?";
}

}  // namespace tessera

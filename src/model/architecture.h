// One architecture as a unit: everything that differs between model families
// lives in its folder src/model/<name>/ and is reached through one
// ArchitectureUnit, registered by one line in model/architectures.cc.
//
//   config.cc  its Hugging Face config class and its GGUF metadata -> ModelSpec
//   layer.cc   one decoder layer as ops (families may share: Qwen2 / Qwen3 use Llama's)
//   unit.cc    the unit: names, readers, llama.cpp's tensor names and storage
//              changes (GgufTensorRules), builder hooks
//   <name>.h   what the folder's files share
//
// Everything outside the folders (the converter, the runtime, the tools)
// reads only the ModelSpec and the unit, never an architecture's name.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/model_spec.h"
#include "model/program_builder.h"
#include "sources/gguf_spec.h"
#include "sources/hf_config.h"
#include "sources/weight_loader.h"

namespace tessera::model {

using LayerBuilder = void (*)(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

struct ArchitectureUnit {
  // ModelSpec::arch of its models (bundles record it).
  const char* name;

  // Hugging Face: the config.json model_type of the text model and its reader
  // (nullptr: not read from checkpoints) ...
  const char* hf_model_type = nullptr;
  ModelSpec (*read_hf_config)(const hf::Reader& r) = nullptr;
  // ... and the multimodal config whose `text_config` holds it.
  struct HfWrapper {
    const char* model_type;  // e.g. "gemma3"
    const char* class_name;  // default architectures[0]
    bool tie_default;        // the wrapper class's tie_word_embeddings default
  };
  std::optional<HfWrapper> hf_wrapper{};

  // GGUF: general.architecture, the reader of its metadata (nullptr: not read
  // from GGUF), and how llama.cpp names and stores its tensors.
  const char* gguf_architecture = nullptr;
  ModelSpec (*read_gguf)(const GgufMetadataReader& r) = nullptr;
  GgufTensorRules gguf_tensors{};

  // Programs: one decoder layer, and the layer kinds it builds.
  LayerBuilder build_layer = nullptr;
  std::vector<LayerKind> layer_kinds = {LayerKind::FullAttention, LayerKind::SlidingAttention};
  // Ops after the token embedding in the first chunk (Gemma 4's per-layer
  // inputs); nullptr: none.
  void (*build_after_embedding)(ProgramBuilder& b, const ModelSpec& s) = nullptr;
  // The weight of the norm before the output head.
  const char* final_norm = "model.norm.weight";

  // The chat template for files that carry none (a model's own always wins);
  // nullptr: none.
  const char* builtin_chat_template = nullptr;
};

}  // namespace tessera::model

// A model as the user names it: a GGUF file, a Hugging Face checkpoint
// directory (config.json + *.safetensors [+ tokenizer.json]), or the name of
// a pulled model. Opened (model/open_model_source.h), it holds the normalized
// ModelSpec and zero-copy views of every stored tensor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/tensor_view.h"

namespace tessera {

class GgufFile;
struct GgufTensorRules;
class SafetensorsCheckpoint;

enum class SourceFormat { Gguf, HfDirectory };

// A model's tokenizer as `tessera info` describes it (made by
// tokenizer/tokenizer_summary.h, through the Tokenizer class).
struct TokenizerSummary {
  std::string model;  // GGUF tokenizer.ggml.model ("gpt2", "llama") or tokenizer.json model.type
  std::string kind;   // "byte-level BPE", "SentencePiece BPE", ... or "none"
  int64_t vocab_size = 0;
  bool has_chat_template = false;
};

struct ModelSource {
  SourceFormat format = SourceFormat::Gguf;
  std::string path;  // the GGUF file or the checkpoint directory
  ModelSpec spec;
  std::vector<TensorView> tensors;
  std::shared_ptr<const GgufFile> gguf;                     // GGUF sources
  std::shared_ptr<const SafetensorsCheckpoint> checkpoint;  // HF sources
  // GGUF sources: how the architecture's tensors are named and stored there
  // (its unit's rules, set by open_model_source).
  const GgufTensorRules* gguf_rules = nullptr;

  const TensorView* find(const std::string& name) const;
};

// Resolves `name_or_path` without opening it: an existing directory as is, a
// .safetensors file or config.json as its directory, another existing file as
// is (a GGUF, checked when opened), else a pulled model name as its GGUF.
// Throws Error for an unknown name or a name not pulled yet.
std::string resolve_model_path(const std::string& name_or_path);


}  // namespace tessera

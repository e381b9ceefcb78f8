#include "model/open_model_source.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "model/architectures.h"
#include "sources/gguf.h"
#include "sources/safetensors.h"

namespace fs = std::filesystem;

namespace tessera {
namespace {

bool starts_with_gguf_magic(const std::string& path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

// The config must describe the stored tensors: the embedding table is
// [vocab_size, hidden_size].
void check_embedding_shape(const ModelSource& src) {
  for (const char* name : {"token_embd.weight", "model.embed_tokens.weight",
                           "model.language_model.embed_tokens.weight"}) {
    const TensorView* t = src.find(name);
    if (t == nullptr) continue;
    if (t->shape.size() != 2 || t->shape[0] != static_cast<uint64_t>(src.spec.vocab_size) ||
        t->shape[1] != static_cast<uint64_t>(src.spec.hidden_size)) {
      std::string shape;
      for (uint64_t d : t->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      fail(src.path, fmt::format("tensor '{}'", name),
           "shape [{}] does not match vocab_size={} x hidden_size={} from the model config", shape,
           src.spec.vocab_size, src.spec.hidden_size);
    }
    return;
  }
}

ModelSource open_gguf(const std::string& path) {
  ModelSource src;
  src.format = SourceFormat::Gguf;
  src.path = path;
  src.gguf = std::make_shared<const GgufFile>(GgufFile::open(path));
  src.spec = spec_from_gguf(*src.gguf);
  src.gguf_rules = &model::architecture_of(src.spec).gguf_tensors;
  src.tensors = src.gguf->tensors();
  return src;
}

ModelSource open_hf_directory(const fs::path& dir) {
  if (!fs::exists(dir / "config.json"))
    fail(dir.string(), "", "not a model directory: no config.json");
  ModelSource src;
  src.format = SourceFormat::HfDirectory;
  src.path = dir.string();
  src.spec = spec_from_hf_config_file((dir / "config.json").string());
  src.checkpoint = std::make_shared<const SafetensorsCheckpoint>(SafetensorsCheckpoint::open(dir.string()));
  src.tensors = src.checkpoint->tensors();
  return src;
}

}  // namespace

ModelSource open_model_source(const std::string& name_or_path) {
  std::error_code ec;
  const std::string path = resolve_model_path(name_or_path);
  ModelSource src;
  if (fs::is_directory(path, ec)) {
    src = open_hf_directory(path);
  } else if (starts_with_gguf_magic(path)) {
    src = open_gguf(path);
  } else {
    fail(path, "", "not a GGUF file (no 'GGUF' magic) and not a checkpoint directory");
  }
  check_embedding_shape(src);
  return src;
}

}  // namespace tessera

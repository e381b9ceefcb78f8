#include "sources/model_summary.h"

#include <map>

#include "core/model_spec_json.h"

namespace tessera {
namespace {

struct FormatTally {
  uint64_t tensors = 0, elements = 0, bytes = 0;
};

}  // namespace

nlohmann::json summarize_model_source(const ModelSource& src) {
  std::map<std::string, FormatTally> formats;
  uint64_t parameters = 0;
  for (const auto& t : src.tensors) {
    FormatTally& f = formats[std::string(dtype_name(t.dtype))];
    ++f.tensors;
    f.elements += t.elements();
    f.bytes += t.nbytes;
    parameters += t.elements();
  }
  nlohmann::json fj = nlohmann::json::object();
  for (const auto& [name, f] : formats)
    fj[name] = {{"tensors", f.tensors}, {"elements", f.elements}, {"bytes", f.bytes}};
  return {
      {"path", src.path},
      {"source", src.format == SourceFormat::Gguf ? "gguf" : "hf"},
      {"spec", model_spec_to_json(src.spec)},
      {"parameters", parameters},
      {"tensors", src.tensors.size()},
      {"formats", fj},
      {"context_length", src.spec.context_length},
      {"tokenizer",
       {{"model", src.tokenizer.model},
        {"kind", src.tokenizer.kind},
        {"vocab_size", src.tokenizer.vocab_size},
        {"chat_template", src.tokenizer.has_chat_template}}},
  };
}

}  // namespace tessera

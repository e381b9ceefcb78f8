#include "bundle/bundle_summary.h"

#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/model_spec_json.h"
#include "sources/model_source.h"

namespace tessera {

std::string bundle_tokenizer_path(const Manifest& m, const std::string& directory) {
  const std::string kind = m.tokenizer.value("kind", "none");
  if (kind == "gguf") return (std::filesystem::path(directory) / m.tokenizer.value("file", "tokenizer.gguf")).string();
  if (kind == "hf") return directory;
  fail(directory, "tokenizer", "this bundle has no tokenizer (its source had none)");
}

nlohmann::json summarize_bundle(const Bundle& bundle, const std::string& directory) {
  const Manifest& m = bundle.manifest();
  struct Tally {
    uint64_t tensors = 0, elements = 0, bytes = 0;
  };
  std::map<std::string, Tally> formats;
  uint64_t parameters = 0;
  for (const TensorEntry& t : m.tensors) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    Tally& f = formats[std::string(weight_format_name(t.format))];
    ++f.tensors;
    f.elements += elements;
    f.bytes += t.data.bytes + t.scales.bytes + t.palette.bytes;
    parameters += elements;
  }
  nlohmann::json fj = nlohmann::json::object();
  for (const auto& [name, f] : formats) fj[name] = {{"tensors", f.tensors}, {"elements", f.elements}, {"bytes", f.bytes}};
  TokenizerSummary tok;
  tok.kind = "none";
  if (m.tokenizer.value("kind", "none") != "none") tok = summarize_tokenizer(bundle_tokenizer_path(m, directory));
  return {
      {"path", directory},
      {"source", "bundle"},
      {"spec", model_spec_to_json(m.spec)},
      {"parameters", parameters},
      {"tensors", m.tensors.size()},
      {"formats", fj},
      {"context_length", m.spec.context_length},
      {"tokenizer",
       {{"model", tok.model}, {"kind", tok.kind}, {"vocab_size", tok.vocab_size}, {"chat_template", tok.has_chat_template}}},
      {"quantization", m.quantization},
      {"tessera_version", m.tessera_version},
  };
}

}  // namespace tessera

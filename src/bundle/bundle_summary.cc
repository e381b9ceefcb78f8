#include "bundle/bundle_summary.h"

#include <filesystem>
#include <map>

#include "core/error.h"
#include "sources/model_source.h"
#include "sources/model_summary.h"

namespace tessera {

std::string bundle_tokenizer_path(const Manifest& m, const std::string& directory) {
  const std::string kind = m.tokenizer.value("kind", "none");
  if (kind == "gguf") return (std::filesystem::path(directory) / m.tokenizer.value("file", "tokenizer.gguf")).string();
  if (kind == "hf") return directory;
  fail(directory, "tokenizer", "this bundle has no tokenizer (its source had none)");
}

nlohmann::json summarize_bundle(const Bundle& bundle, const std::string& directory, const TokenizerSummary& tok) {
  const Manifest& m = bundle.manifest();
  std::map<std::string, FormatTally> formats;
  for (const TensorEntry& t : m.tensors) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    FormatTally& f = formats[std::string(weight_format_name(t.format))];
    ++f.tensors;
    f.elements += elements;
    f.bytes += t.data.bytes + t.scales.bytes + t.palette.bytes;
  }
  nlohmann::json j = model_summary_json(directory, "bundle", m.spec, formats, m.tensors.size(), tok);
  j["quantization"] = m.quantization;
  j["tessera_version"] = m.tessera_version;
  return j;
}

}  // namespace tessera

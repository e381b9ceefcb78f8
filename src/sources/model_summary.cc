#include "sources/model_summary.h"

#include "core/model_spec_json.h"

namespace tessera {

nlohmann::json model_summary_json(const std::string& path, const std::string& source, const ModelSpec& spec,
                                  const std::map<std::string, FormatTally>& formats, uint64_t tensors,
                                  const TokenizerSummary& tokenizer) {
  uint64_t parameters = 0;
  nlohmann::json fj = nlohmann::json::object();
  for (const auto& [name, f] : formats) {
    fj[name] = {{"tensors", f.tensors}, {"elements", f.elements}, {"bytes", f.bytes}};
    parameters += f.elements;
  }
  return {
      {"path", path},
      {"source", source},
      {"spec", model_spec_to_json(spec)},
      {"parameters", parameters},
      {"tensors", tensors},
      {"formats", fj},
      {"context_length", spec.context_length},
      {"tokenizer",
       {{"model", tokenizer.model},
        {"kind", tokenizer.kind},
        {"vocab_size", tokenizer.vocab_size},
        {"chat_template", tokenizer.has_chat_template}}},
  };
}

nlohmann::json summarize_model_source(const ModelSource& src, const TokenizerSummary& tokenizer) {
  std::map<std::string, FormatTally> formats;
  for (const auto& t : src.tensors) {
    FormatTally& f = formats[std::string(dtype_name(t.dtype))];
    ++f.tensors;
    f.elements += t.elements();
    f.bytes += t.nbytes;
  }
  return model_summary_json(src.path, src.format == SourceFormat::Gguf ? "gguf" : "hf", src.spec, formats,
                            src.tensors.size(), tokenizer);
}

}  // namespace tessera

// The description of a model that `tessera info` prints and the Python
// module's `tessera.info()` returns: spec, parameter count, tensor formats,
// tokenizer, context length.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "sources/model_source.h"

namespace tessera {

// `tokenizer`: summarize_tokenizer(src.path) (tokenizer/tokenizer_summary.h).
nlohmann::json summarize_model_source(const ModelSource& src, const TokenizerSummary& tokenizer);

// One stored format's share of a model.
struct FormatTally {
  uint64_t tensors = 0, elements = 0, bytes = 0;
};

// The JSON shape every summary shares (sources here, bundles in
// bundle/bundle_summary.h): "parameters" is the sum of the tallies' elements.
nlohmann::json model_summary_json(const std::string& path, const std::string& source, const ModelSpec& spec,
                                  const std::map<std::string, FormatTally>& formats, uint64_t tensors,
                                  const TokenizerSummary& tokenizer);

}  // namespace tessera

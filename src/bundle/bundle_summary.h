// What `tessera info` prints for a bundle: the same JSON shape as
// summarize_model_source (sources/model_summary.h), from the manifest (spec,
// tensors by stored format with their section bytes) and the bundle's
// tokenizer files; "source" is "bundle" and "quantization" holds the
// converter's settings.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bundle/bundle.h"
#include "sources/model_source.h"

namespace tessera {

// `tokenizer`: summarize_tokenizer(bundle_tokenizer_path(...)) (tokenizer/
// tokenizer_summary.h), or kind "none" for a bundle without one.
nlohmann::json summarize_bundle(const Bundle& bundle, const std::string& directory, const TokenizerSummary& tokenizer);

// The file (GGUF) or directory (tokenizer.json) holding a bundle's tokenizer;
// Error if the bundle has none.
std::string bundle_tokenizer_path(const Manifest& manifest, const std::string& directory);

}  // namespace tessera

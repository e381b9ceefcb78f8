// The description of a model that `tessera info` prints and the Python
// module's `tessera.info()` returns: spec, parameter count, tensor formats,
// tokenizer, context length.
#pragma once

#include <nlohmann/json.hpp>

#include "sources/model_source.h"

namespace tessera {

nlohmann::json summarize_model_source(const ModelSource& src);

}  // namespace tessera

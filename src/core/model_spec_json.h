// ModelSpec as JSON: what `tessera info --json` prints and what bundle
// manifests store. Field names follow the C++ members.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/model_spec.h"

namespace tessera {

nlohmann::json model_spec_to_json(const ModelSpec& spec);
// The inverse of model_spec_to_json (bundle manifests). Throws Error naming
// `file` and the first missing or mistyped field.
ModelSpec model_spec_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace tessera

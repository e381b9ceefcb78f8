// ModelSpec as JSON: what `tessera info --json` prints and what bundle
// manifests store. Field names follow the C++ members.
#pragma once

#include <nlohmann/json.hpp>

#include "core/model_spec.h"

namespace tessera {

nlohmann::json model_spec_to_json(const ModelSpec& spec);

}  // namespace tessera

// The registry of architectures (model/architecture.h), and the ModelSpec of
// a Hugging Face config or a GGUF file read by the architecture it names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model_spec.h"
#include "model/architecture.h"
#include "sources/gguf.h"

namespace tessera {

// The architecture registered for config.json's `model_type` (a text model, or
// a multimodal wrapper whose `text_config` is read) reads the config; `file`
// names it in errors. Unknown model types are an Error listing the known ones.
ModelSpec spec_from_hf_config(const nlohmann::json& config, const std::string& file);
// `path` is a config.json file or a model directory containing one.
ModelSpec spec_from_hf_config_file(const std::string& path);

// The architecture registered for `general.architecture` reads the metadata.
// Throws Error (file = the GGUF path, subject = the metadata key or tensor)
// when a required key is missing, has the wrong type, or values are
// inconsistent, and for an architecture without a unit (mixture-of-experts
// models among them).
ModelSpec spec_from_gguf(const GgufFile& file);

namespace model {

// Every registered architecture, in registry order.
const std::vector<const ArchitectureUnit*>& architectures();
// The unit named `name` (ModelSpec::arch); nullptr when there is none.
const ArchitectureUnit* find_architecture(std::string_view name);
// The unit of `spec`; Error naming spec.arch and the known names when there is none.
const ArchitectureUnit& architecture_of(const ModelSpec& spec);

}  // namespace model
}  // namespace tessera

// Opening a model source: the file or directory a name resolves to
// (sources/model_source.h), its ModelSpec read by the architecture it names
// (model/architectures.h), and that architecture's GGUF tensor rules.
#pragma once

#include <string>

#include "sources/model_source.h"

namespace tessera {

// Resolves `name_or_path` (existing path first, then a pulled model name), opens it and reads its spec
// with its architecture. Throws Error naming what could not be found or read.
ModelSource open_model_source(const std::string& name_or_path);

}  // namespace tessera

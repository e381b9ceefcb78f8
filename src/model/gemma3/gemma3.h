// Gemma 3: (1 + w) norms, post-norms, softcaps, sliding and global layers.
// The folder's parts (model/architecture.h says what each file holds).
#pragma once

#include <string>
#include <vector>

#include "model/architecture.h"

namespace tessera::model::gemma3 {

ModelSpec read_hf_config(const hf::Reader& r);
ModelSpec read_gguf(const GgufMetadataReader& r);
void build_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);

// The built-in chat template (chat_template.cc).
extern const char* const kChatTemplate;

extern const ArchitectureUnit unit;

}  // namespace tessera::model::gemma3

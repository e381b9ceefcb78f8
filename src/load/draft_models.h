// Draft models for speculative decoding (`speculative: "draft:PATH"`),
// loaded before a generation starts and handed to the runtime in
// GenerateOptions::speculative.draft_model: never loaded from inside one.
#pragma once

#include <memory>
#include <string>

#include "generation/generate.h"
#include "runtime/model.h"

namespace tessera {

// Draft models are loaded once per process and path, kept, and shared by
// every generation that names them.
// The draft model at `path` (a bundle, or a source run through its cached
// default bundle as `tessera run` does), loaded with the target's thread
// count the first time, then kept for the process and shared. Throws Error when it cannot be
// loaded, or when its vocabulary differs from the target's (size, or the
// text of any token).
std::shared_ptr<const Model> shared_draft_model(const std::string& path, const Model& target);

// For a draft mode in `options` without its model yet: loads (or finds) the
// draft for `target` and sets options.speculative.draft_model. Other modes:
// nothing.
void load_draft_model(GenerateOptions& options, const Model& target);

}  // namespace tessera

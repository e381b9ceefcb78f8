// What `tessera info` says about a model's tokenizer, read through the
// Tokenizer class itself (the one that encodes): its model and kind, its
// vocabulary size (stored and added ids) and whether the model has a chat
// template (find_chat_template, as `run --chat` looks for one).
#pragma once

#include <string>

#include "sources/model_source.h"

namespace tessera {

// `gguf_or_directory`: a GGUF file, or a directory holding tokenizer.json (an
// HF checkpoint or a bundle); a directory without one has kind "none". A
// tokenizer the Tokenizer class refuses has kind "unsupported: <why>".
// Throws Error for an unreadable or malformed chat template.
TokenizerSummary summarize_tokenizer(const std::string& gguf_or_directory);

}  // namespace tessera

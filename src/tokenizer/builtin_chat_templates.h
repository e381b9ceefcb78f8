// Chat templates for models whose files carry none. The Gemma 3 270M GGUF
// (the `gemma3-270m` pull) has no tokenizer.chat_template; Gemma 3's
// published template (google/gemma-3-270m-it, identical across sizes) is used.
// A model's own template always wins over these.
#pragma once

#include <optional>
#include <string>

#include "core/model_spec.h"

namespace tessera {

std::optional<std::string> builtin_chat_template(Architecture arch);

}  // namespace tessera

// The token ids that end generation for a model source: generation_config.json's
// eos_token_id when an HF checkpoint has one (what transformers' generate()
// stops on), else the spec's eos ids (config.json; for GGUF also the
// end-of-turn tokens gguf_spec.cc collects), plus the tokenizer's eos token.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sources/model_source.h"

namespace tessera {

std::vector<int32_t> stop_token_ids(const ModelSource& src, std::optional<int32_t> tokenizer_eos);

}  // namespace tessera

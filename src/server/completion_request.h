// The body of POST /v1/chat/completions and POST /v1/completions, checked
// field by field and turned into an engine request. Every problem is an
// ApiError 400 naming the field (`param`); unknown fields are ignored, as
// OpenAI's API does for the ones it deprecates.
//
// Read: model, messages (chat: role + content as a string or a list of
// {"type": "text", "text"} parts) or prompt (completions: a string or a list
// of token ids), max_tokens / max_completion_tokens (clamped to the server's
// cap; absent: the cap), temperature, top_p, seed (absent: a random one),
// stop (a string or up to 4),
// stream, stream_options.include_usage, n (1 only), and Tessera's extras
// top_k, min_p, repeat_penalty, ignore_eos, speculative ("off" | "lookup" |
// "auto", runtime/speculative.h) and draft_max.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/request.h"

namespace tessera::server {

enum class Endpoint { Chat, Completion };

struct CompletionRequest {
  engine::Request request;  // prompt and settings; the callbacks are the server's to set
  std::string model;        // as asked for ("" if absent)
  bool stream = false;
  bool include_usage = false;
};

// `body`: the request's parsed JSON. Throws ApiError.
CompletionRequest parse_completion_request(const nlohmann::json& body, Endpoint endpoint, int64_t max_tokens_cap);

}  // namespace tessera::server

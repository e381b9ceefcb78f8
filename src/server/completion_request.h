// The body of POST /v1/chat/completions and POST /v1/completions, checked
// field by field and turned into an engine request. Every problem is an
// ApiError 400 naming the field (`param`); unknown fields are ignored, as
// OpenAI's API does for the ones it deprecates.
//
// Read: model, messages (chat: role + content as a string or a list of
// {"type": "text", "text"} parts) or prompt (completions: a string or a list
// of token ids), stream, stream_options.include_usage, n (1 only), and the
// generation settings (include/tessera/generation_settings.hpp) that
// setting_fields() lists: OpenAI's max_tokens / max_completion_tokens
// (clamped to the server's cap; absent: the cap), temperature (absent: 1, as
// OpenAI's), top_p, seed (absent: a random one) and stop (a string or up to
// 4), and Tessera's extensions top_k, min_p, repeat_penalty, repeat_last_n,
// ignore_eos, speculative ("off" | "lookup" | "auto" | "draft" |
// "lookup+draft": the server's --draft model, generation/speculative.h)
// and draft_max; constrained decoding: OpenAI's response_format
// ({"type": "text" | "json_object" | "json_schema", ...}) and llama-server's
// json_schema (an object or its text) and grammar (GBNF), and regex. Chat
// also: tools, tool_choice, parallel_tool_calls (generation/tool_calls.h),
// chat_template_kwargs (the template's extra variables, such as
// enable_thinking) and reasoning_format ("none" keeps reasoning in content).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "generation/tool_calls.h"

namespace tessera::server {

enum class Endpoint { Chat, Completion };

struct CompletionRequest {
  engine::Request request;  // prompt and settings; the callbacks are the server's to set
  std::string model;        // as asked for ("" if absent)
  bool stream = false;
  bool include_usage = false;
  // Chat with `tools` (tool_choice, parallel_tool_calls): the server renders
  // and parses them in the model's style (generation/tool_calls.h).
  std::optional<ToolRequest> tools;
  // Chat: reasoning goes to reasoning_content (generation/reasoning.h)
  // unless reasoning_format is "none".
  bool split_reasoning = true;
};

// How one generation setting reaches this door: the JSON field that sets
// it, or why none does. Every setting of the list has an entry
// (completion_request_test.cc sets each field and checks that it arrives).
struct SettingField {
  const char* setting;   // its name in the list
  const char* field;     // the request's field; nullptr: not at this door
  bool extension;        // a field of Tessera's own, not OpenAI's
  const char* not_here;  // field == nullptr: why
};
std::span<const SettingField> setting_fields();

// `body`: the request's parsed JSON. Throws ApiError.
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, Endpoint endpoint, int64_t max_tokens_cap);

}  // namespace tessera::server

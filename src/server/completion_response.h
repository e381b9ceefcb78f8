// The JSON bodies the server answers completions with, in OpenAI's shapes:
// whole responses ("chat.completion", "text_completion") and the chunks of a
// stream ("chat.completion.chunk" / "text_completion" with a delta or text),
// each with `usage` (prompt_tokens_details.cached_tokens: the prompt tokens
// whose KV was reused) and Tessera's `timings` (ttft, prefill / decode
// speeds, reused tokens and the reuse note).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "generation/tool_calls.h"
#include "server/completion_request.h"

namespace tessera::server {

using ojson = nlohmann::ordered_json;

// What every response of one request shares.
struct ResponseHeader {
  std::string id;  // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;
  std::string model;
  Endpoint endpoint = Endpoint::Chat;
};

ResponseHeader new_response_header(Endpoint endpoint, const std::string& model);

// OpenAI's finish reasons: "stop" (a stop token or string) or "length".
std::string openai_finish_reason(const std::string& tessera_reason);

ojson usage_json(const engine::Result& r);
ojson timings_json(const engine::Result& r);
ojson full_response(const ResponseHeader& h, const engine::Result& r);
// A stream chunk carrying `text` (chat: the first one also carries the role).
ojson text_chunk(const ResponseHeader& h, std::string_view text, bool first);
// The last chunk: no text, the finish reason and the timings.
ojson final_chunk(const ResponseHeader& h, const engine::Result& r);
// stream_options.include_usage: a chunk with no choices and the usage.
ojson usage_chunk(const ResponseHeader& h, const engine::Result& r);

// Chat with tools or reasoning (generation/tool_calls.h ChatReplyStream):
// the reply's message as reasoning_content (when there is any), content
// and `tool_calls`; finish_reason "tool_calls" when it made any and was not
// cut short.
ojson chat_reply_response(const ResponseHeader& h, const engine::Result& r, const ToolReply& reply);
// A stream chunk with one delta of such a reply (reasoning, content, or a
// piece of a call: its first piece carries id, type and name).
ojson reply_delta_chunk(const ResponseHeader& h, const ToolReplyDelta& delta, bool first);
// The last chunk of such a reply, which made `calls` calls.
ojson reply_final_chunk(const ResponseHeader& h, const engine::Result& r, int calls);

// The bytes of one server-sent event: "data: <json>\n\n".
std::string sse_event(const ojson& data);

}  // namespace tessera::server

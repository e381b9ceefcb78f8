#include "server/completion_response.h"

#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>

namespace tessera::server {

namespace {

const char* object_name(Endpoint e, bool chunk) {
  if (e == Endpoint::Completion) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

ojson base(const ResponseHeader& h, bool chunk) {
  return {{"id", h.id}, {"object", object_name(h.endpoint, chunk)}, {"created", h.created}, {"model", h.model}};
}

}  // namespace

ResponseHeader new_response_header(Endpoint endpoint, const std::string& model) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t process_salt = std::random_device{}();
  ResponseHeader h;
  h.endpoint = endpoint;
  h.model = model;
  h.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.id = fmt::format("{}-{:08x}{:08x}", endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl",
                     static_cast<uint32_t>(process_salt), static_cast<uint32_t>(++counter));
  return h;
}

std::string openai_finish_reason(const std::string& r) {
  if (r == "length" || r == "context") return "length";
  return "stop";  // eos, stop, cancelled
}

ojson usage_json(const engine::Result& r) {
  const int64_t completion = static_cast<int64_t>(r.generation.ids.size());
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", r.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", r.reused_tokens}}}};
}

ojson timings_json(const engine::Result& r) {
  const GenerateResult& g = r.generation;
  return {{"ttft_ms", g.ttft_ms},          {"prefill_tokens", g.prompt_tokens}, {"prefill_tok_s", g.prefill_tok_s()},
          {"decode_tokens", g.decode_steps}, {"decode_tok_s", g.decode_tok_s()}, {"reused_tokens", r.reused_tokens},
          {"reused_from", r.reused_from},
          {"reuse_note", r.reuse_note},     {"queue_ms", r.queue_ms}};
}

ojson full_response(const ResponseHeader& h, const engine::Result& r) {
  ojson out = base(h, false);
  ojson choice = {{"index", 0}};
  if (h.endpoint == Endpoint::Chat)
    choice["message"] = {{"role", "assistant"}, {"content", r.generation.text}};
  else
    choice["text"] = r.generation.text;
  choice["finish_reason"] = openai_finish_reason(r.generation.finish_reason);
  out["choices"] = ojson::array({choice});
  out["usage"] = usage_json(r);
  out["timings"] = timings_json(r);
  return out;
}

ojson text_chunk(const ResponseHeader& h, std::string_view text, bool first) {
  ojson out = base(h, true);
  ojson choice = {{"index", 0}};
  if (h.endpoint == Endpoint::Chat) {
    choice["delta"] = first ? ojson{{"role", "assistant"}, {"content", text}} : ojson{{"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["finish_reason"] = nullptr;
  out["choices"] = ojson::array({choice});
  return out;
}

ojson final_chunk(const ResponseHeader& h, const engine::Result& r) {
  ojson out = base(h, true);
  ojson choice = {{"index", 0}};
  if (h.endpoint == Endpoint::Chat)
    choice["delta"] = ojson::object();
  else
    choice["text"] = "";
  choice["finish_reason"] = openai_finish_reason(r.generation.finish_reason);
  out["choices"] = ojson::array({choice});
  out["timings"] = timings_json(r);
  return out;
}

ojson usage_chunk(const ResponseHeader& h, const engine::Result& r) {
  ojson out = base(h, true);
  out["choices"] = ojson::array();
  out["usage"] = usage_json(r);
  return out;
}

namespace {

std::string tool_finish_reason(const engine::Result& r, size_t calls) {
  const std::string reason = openai_finish_reason(r.generation.finish_reason);
  return calls > 0 && reason == "stop" ? "tool_calls" : reason;
}

}  // namespace

ojson chat_reply_response(const ResponseHeader& h, const engine::Result& r, const ToolReply& reply) {
  ojson out = full_response(h, r);
  ojson& choice = out["choices"][0];
  choice["message"]["content"] = reply.calls.empty() || !reply.content.empty() ? ojson(reply.content) : ojson(nullptr);
  if (!reply.reasoning.empty()) choice["message"]["reasoning_content"] = reply.reasoning;
  if (!reply.calls.empty()) {
    ojson calls = ojson::array();
    for (const ToolCall& c : reply.calls)
      calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    choice["message"]["tool_calls"] = std::move(calls);
  }
  choice["finish_reason"] = tool_finish_reason(r, reply.calls.size());
  return out;
}

ojson reply_delta_chunk(const ResponseHeader& h, const ToolReplyDelta& d, bool first) {
  if (!d.reasoning.empty()) {
    ojson out = base(h, true);
    ojson delta = first ? ojson{{"role", "assistant"}, {"reasoning_content", d.reasoning}}
                        : ojson{{"reasoning_content", d.reasoning}};
    out["choices"] = ojson::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", nullptr}}});
    return out;
  }
  if (d.index < 0) return text_chunk(h, d.content, first);
  ojson call = {{"index", d.index}};
  if (!d.id.empty()) {
    call["id"] = d.id;
    call["type"] = "function";
    call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
  } else {
    call["function"] = {{"arguments", d.arguments}};
  }
  ojson delta = {{"tool_calls", ojson::array({call})}};
  if (first) delta = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", delta["tool_calls"]}};
  ojson out = base(h, true);
  out["choices"] = ojson::array({{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}}});
  return out;
}

ojson reply_final_chunk(const ResponseHeader& h, const engine::Result& r, int calls) {
  ojson out = final_chunk(h, r);
  out["choices"][0]["finish_reason"] = tool_finish_reason(r, static_cast<size_t>(calls));
  return out;
}

std::string sse_event(const ojson& data) {
  // Generated text can hold broken UTF-8 only if the model emits it; the
  // detokenizer never splits a sequence, but replace rather than throw.
  return "data: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

}  // namespace tessera::server

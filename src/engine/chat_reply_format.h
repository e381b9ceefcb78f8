// How a chat request's reply is read back, and what the request needs for
// it: with tools, the messages and template variables of the model's call
// style and the constraint that keeps calls well-formed
// (generation/tool_calls.h); with a template that has reasoning markers,
// where the reply starts (generation/reasoning.h), so that reasoning is
// split off as reasoning_content. Every front door that takes chat
// messages (the server, Python's Engine.chat) prepares its requests here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/request.h"
#include "generation/reasoning.h"
#include "generation/tool_calls.h"

namespace tessera {
class Model;
}

namespace tessera::engine {

struct ChatReplyFormat {
  std::shared_ptr<const ToolCalling> tools;   // null: no tools
  std::optional<ReasoningSyntax> reasoning;   // the markers to split at (none: reasoning stays in content)
  ReasoningStart start = ReasoningStart::Skipped;
  std::optional<ReplyFrames> frames;          // message frames taken out of the content (none: no frames)

  // Whether the reply is more than its text (tools, reasoning or frames).
  bool parses() const { return tools || reasoning || frames; }
  ToolReply parse(std::string_view text, const std::string& reply_id) const;
  ChatReplyStream stream(std::string reply_id) const;
};

// Prepares `request` (chat messages set) for `model`'s template: with
// `tools`, its messages and template_extra in the tools' style and its
// constraint (Error("request", "tools", ...) when the settings hold one of
// their own). `split_reasoning` false leaves reasoning in the content (the
// constraint still lets the reply reason first). Renders the prompt once
// to see where the reply starts when the template has reasoning markers.
ChatReplyFormat prepare_chat_reply(const Model& model, Request& request, const std::optional<ToolRequest>& tools,
                                   bool split_reasoning);

}  // namespace tessera::engine

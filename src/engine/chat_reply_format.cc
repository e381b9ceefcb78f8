#include "engine/chat_reply_format.h"

#include <utility>

#include "generation/chat.h"
#include "runtime/model.h"
#include "tokenizer/chat_template.h"

namespace tessera::engine {

ToolReply ChatReplyFormat::parse(std::string_view text, const std::string& reply_id) const {
  return ChatReplyStream::parse(text, tools.get(), reasoning, start, reply_id, frames);
}

ChatReplyStream ChatReplyFormat::stream(std::string reply_id) const {
  return ChatReplyStream(tools.get(), reasoning, start, std::move(reply_id), frames);
}

ChatReplyFormat prepare_chat_reply(const Model& model, Request& request, const std::optional<ToolRequest>& tools,
                                   bool split_reasoning) {
  ChatReplyFormat f;
  const ChatTemplate* tpl = model.chat_template();
  const ToolCallStyle style = tool_call_style_of(tpl);
  if (tools) {
    const ToolCalling plain(style, *tools);
    request.messages =
        plain.messages(request.messages.value_or(nlohmann::ordered_json::array()), call_message_form_of(tpl));
    const nlohmann::ordered_json extra = plain.template_extra();
    for (const auto& [key, value] : extra.items()) request.template_extra[key] = value;
  }
  f.reasoning = reasoning_syntax_of(tpl);
  f.frames = reply_frames_of(style);
  if (f.reasoning && request.messages)
    f.start = reasoning_start(chat_prompt_text(model, *request.messages, request.template_extra), *f.reasoning);
  if (tools) {
    auto calling = std::make_shared<ToolCalling>(style, *tools, f.reasoning, f.start);
    calling->constrain(request.settings);
    f.tools = std::move(calling);
  }
  if (!split_reasoning) f.reasoning.reset();
  return f;
}

}  // namespace tessera::engine

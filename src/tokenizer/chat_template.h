// Chat templates: a model's own Jinja chat_template rendered byte for byte as
// Hugging Face transformers' apply_chat_template(tokenize=False) renders it.
//
// The template comes from the model (find_chat_template): GGUF metadata
// `tokenizer.chat_template`, or in a Hugging Face directory chat_template.jinja,
// chat_template.json or tokenizer_config.json's "chat_template". The Jinja
// engine is jinja_lexer / jinja_parser / jinja_value / jinja_eval; what it does
// not support is an Error at parse time (or, for dynamic uses, at render time)
// naming the feature and its line and column, never silently different text.
//
// Rendering sees what transformers' render_jinja_template passes:
//   messages               the conversation, each message with its reasoning
//                          aliased as transformers does (reasoning_content /
//                          thinking / reasoning: the first one set fills
//                          "thinking" (first key) and "reasoning_content")
//   tools, documents       from `extra` when given, else None
//   add_generation_prompt
//   bos_token, eos_token   when set (apply_chat_template passes the tokenizer's
//                          special tokens)
//   every other key of `extra` (enable_thinking, custom variables, ...)
// plus the globals raise_exception, strftime_now, namespace, dict, range.
// JSON objects keep their key order (nlohmann::ordered_json), as Python dicts
// do: tojson output depends on it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jinja/eval.h"

namespace tessera {

struct ChatTemplateOptions {
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // Further template variables: tools, documents, enable_thinking, ...
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  jinja::RenderLimits limits;
};

class ChatTemplate {
 public:
  // Parses and validates `source`; `origin` names it in errors (a file path,
  // "model.gguf:tokenizer.chat_template", ...).
  static ChatTemplate parse(std::string source, std::string origin);

  // `messages`: a JSON array of message objects.
  std::string render(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const;
  // Same with messages as JSON text (parsed keeping key order).
  std::string render_json(const std::string& messages_json, const ChatTemplateOptions& options) const;

  const std::string& source() const { return source_; }
  const std::string& origin() const { return origin_; }

 private:
  std::string source_, origin_;
  std::shared_ptr<const jinja::Template> tpl_;
};

// The chat template of a model: a GGUF file (`tokenizer.chat_template`), a
// Hugging Face checkpoint directory (chat_template.jinja, then
// chat_template.json, then tokenizer_config.json "chat_template"; a list of
// named templates picks "default"), or one of those files given directly.
// nullopt when the model has none; Error when a file is unreadable or malformed.
std::optional<std::string> find_chat_template(const std::string& model_path_or_dir);

}  // namespace tessera

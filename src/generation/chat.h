// A multi-turn conversation on one Session. Each turn renders the whole
// conversation with the model's chat template (add_generation_prompt), keeps
// the longest common token prefix with what the session already holds (the
// KV of earlier turns is reused, not recomputed), runs only the new tokens and
// generates the reply, which joins the conversation as the assistant message.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "generation/generate.h"
#include "runtime/session.h"

namespace tessera {

// `messages` rendered with the model's chat template and a generation
// prompt: the text chat_prompt_ids tokenizes.
std::string chat_prompt_text(const Model& model, const nlohmann::ordered_json& messages,
                             const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

// The token ids of `messages` rendered with the model's chat template and a
// generation prompt, tokenized without adding special tokens again (as
// apply_chat_template(tokenize=True)). Throws Error when the model has no
// template or no tokenizer.
std::vector<int32_t> chat_prompt_ids(const Model& model, const nlohmann::ordered_json& messages,
                                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

class Chat {
 public:
  // reuse_kv false: every turn recomputes the whole conversation (a check
  // that reuse changes nothing).
  Chat(Session& session, GenerateOptions options, std::string system_prompt = "", bool reuse_kv = true);

  // Adds the user message, generates the reply (streamed to on_text) and
  // returns it. `reused_tokens` of the result prompt were already in the KV.
  GenerateResult turn(const std::string& user_message, const std::function<bool(std::string_view)>& on_text = {});
  void reset();

  int64_t reused_tokens() const { return reused_; }
  const nlohmann::ordered_json& messages() const { return messages_; }

 private:
  Session& session_;
  GenerateOptions options_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
  std::string system_;
  int64_t reused_ = 0;
  bool reuse_kv_ = true;
};

}  // namespace tessera

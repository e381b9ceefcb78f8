// A multi-turn conversation on one Session. Each turn renders the whole
// conversation with the model's chat template (add_generation_prompt), keeps
// the longest common token prefix with what the session already holds (the
// KV of earlier turns is reused, not recomputed), runs only the new tokens and
// generates the reply, which joins the conversation as the assistant message.
#pragma once

#include <functional>
#include <span>
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

// A conversation's prompt when it holds images, made by the model's image
// encoder (engine/prompt_images.h implements it): build() takes the rendered
// text and the conversation's image files in order; then ids(), keys() (the
// ids with each image's rows as the media entries the session's history
// will hold) and spans(from): the images within [from, ids().size()), begin
// counted from `from`, encoded on demand, valid until the next build().
class ImagePrompter {
 public:
  virtual ~ImagePrompter() = default;
  virtual void build(std::string text, std::span<const std::string> images) = 0;
  virtual const std::vector<int32_t>& ids() const = 0;
  virtual const std::vector<int32_t>& keys() const = 0;
  virtual std::vector<EmbeddedSpan> spans(int64_t from) = 0;
};

class Chat {
 public:
  // reuse_kv false: every turn recomputes the whole conversation (a check
  // that reuse changes nothing). `images`: how the model takes images (null:
  // it takes none); it must outlive the Chat.
  Chat(Session& session, GenerateOptions options, std::string system_prompt = "", bool reuse_kv = true,
       ImagePrompter* images = nullptr);

  // Adds the user message (after `images`, image files shown with it, which
  // need an ImagePrompter), generates the reply (streamed to on_text) and
  // returns it. `reused_tokens` of the result prompt were already in the KV:
  // with images, an earlier turn's image is reused with its span, never
  // encoded again.
  GenerateResult turn(const std::string& user_message, const std::function<bool(std::string_view)>& on_text = {},
                      const std::vector<std::string>& images = {});
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
  ImagePrompter* prompter_ = nullptr;
  std::vector<std::string> images_;  // the conversation's image files, in order
};

}  // namespace tessera

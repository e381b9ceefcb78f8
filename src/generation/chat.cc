#include "generation/chat.h"

#include <algorithm>

#include "core/error.h"

namespace tessera {

std::string chat_prompt_text(const Model& model, const nlohmann::ordered_json& messages,
                             const nlohmann::ordered_json& extra) {
  const tok::Tokenizer& tok = model.require_tokenizer();
  const ChatTemplate* tpl = model.chat_template();
  if (!tpl) fail(model.path(), "chat template", "the model has no chat template");
  ChatTemplateOptions o;
  o.add_generation_prompt = true;
  if (tok.bos_id()) o.bos_token = std::string(tok.token_to_piece(*tok.bos_id()));
  if (tok.eos_id()) o.eos_token = std::string(tok.token_to_piece(*tok.eos_id()));
  o.extra = extra;
  return tpl->render(messages, o);
}

std::vector<int32_t> chat_prompt_ids(const Model& model, const nlohmann::ordered_json& messages,
                                     const nlohmann::ordered_json& extra) {
  return model.require_tokenizer().encode(chat_prompt_text(model, messages, extra), /*add_special=*/false);
}

Chat::Chat(Session& session, GenerateOptions options, std::string system_prompt, bool reuse_kv,
           ImagePrompter* images)
    : session_(session),
      options_(std::move(options)),
      system_(std::move(system_prompt)),
      reuse_kv_(reuse_kv),
      prompter_(images) {
  reset();
}

void Chat::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!system_.empty()) messages_.push_back({{"role", "system"}, {"content", system_}});
  session_.reset();
  reused_ = 0;
  images_.clear();
}

GenerateResult Chat::turn(const std::string& user_message, const std::function<bool(std::string_view)>& on_text,
                          const std::vector<std::string>& images) {
  if (!images.empty() && !prompter_)
    fail("chat", "images", "this model takes no images (a multimodal Hugging Face checkpoint directory does)");
  if (images.empty()) {
    messages_.push_back({{"role", "user"}, {"content", user_message}});
  } else {
    nlohmann::ordered_json parts = nlohmann::ordered_json::array();
    for (size_t i = 0; i < images.size(); ++i) parts.push_back({{"type", "image"}});
    parts.push_back({{"type", "text"}, {"text", user_message}});
    messages_.push_back({{"role", "user"}, {"content", parts}});
  }
  images_.insert(images_.end(), images.begin(), images.end());
  auto forget_turn = [&] {
    messages_.erase(messages_.end() - 1);
    images_.resize(images_.size() - images.size());
  };
  std::vector<int32_t> ids, keys;
  GenerateOptions options = options_;
  try {
    if (images_.empty()) {
      ids = keys = chat_prompt_ids(session_.model(), messages_);
    } else {
      prompter_->build(chat_prompt_text(session_.model(), messages_), images_);
      ids = prompter_->ids();
      keys = prompter_->keys();
    }
  } catch (...) {
    forget_turn();
    throw;
  }
  // The longest common prefix with what the session holds, never ending
  // inside an image's span (its rows attend to each other).
  const std::vector<int32_t>& held = session_.history();
  size_t common = 0;
  while (reuse_kv_ && common < held.size() && common < keys.size() && held[common] == keys[common]) ++common;
  common = std::min(common, keys.size() - 1);  // at least one new token to run
  while (common > 0 && keys[common - 1] < 0 && keys[common] < 0) --common;
  if (!session_.truncate(static_cast<int64_t>(common))) common = 0;  // ring KV lost it: recompute
  reused_ = static_cast<int64_t>(common);
  GenerateResult r;
  try {
    if (!images_.empty()) options.media = prompter_->spans(static_cast<int64_t>(common));
    r = generate(session_, std::span<const int32_t>(ids).subspan(common), options, on_text);
  } catch (...) {
    forget_turn();
    throw;
  }
  messages_.push_back({{"role", "assistant"}, {"content", r.text}});
  return r;
}

}  // namespace tessera

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

Chat::Chat(Session& session, GenerateOptions options, std::string system_prompt, bool reuse_kv)
    : session_(session), options_(std::move(options)), system_(std::move(system_prompt)), reuse_kv_(reuse_kv) {
  reset();
}

void Chat::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!system_.empty()) messages_.push_back({{"role", "system"}, {"content", system_}});
  session_.reset();
  reused_ = 0;
}

GenerateResult Chat::turn(const std::string& user_message, const std::function<bool(std::string_view)>& on_text) {
  messages_.push_back({{"role", "user"}, {"content", user_message}});
  std::vector<int32_t> ids;
  try {
    ids = chat_prompt_ids(session_.model(), messages_);
  } catch (...) {
    messages_.erase(messages_.end() - 1);
    throw;
  }
  const std::vector<int32_t>& held = session_.history();
  size_t common = 0;
  while (reuse_kv_ && common < held.size() && common < ids.size() && held[common] == ids[common]) ++common;
  common = std::min(common, ids.size() - 1);  // at least one new token to run
  if (!session_.truncate(static_cast<int64_t>(common))) common = 0;  // ring KV lost it: recompute
  reused_ = static_cast<int64_t>(common);
  GenerateResult r;
  try {
    r = generate(session_, std::span<const int32_t>(ids).subspan(common), options_, on_text);
  } catch (...) {
    messages_.erase(messages_.end() - 1);
    throw;
  }
  messages_.push_back({{"role", "assistant"}, {"content", r.text}});
  return r;
}

}  // namespace tessera

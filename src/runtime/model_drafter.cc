#include "runtime/model_drafter.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "convert/bundle_cache.h"
#include "core/error.h"

namespace tessera {

ModelDrafter::ModelDrafter(std::shared_ptr<const Model> draft, int64_t context_length)
    : model_(std::move(draft)), session_(*model_, context_length) {}

void ModelDrafter::propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) {
  draft.clear();
  if (context.empty() || max_tokens < 1) return;
  const int64_t room = session_.context_length() - static_cast<int64_t>(context.size());
  max_tokens = std::min(max_tokens, room);
  if (max_tokens < 1) return;
  // Keep what the session shares with the context, minus one token: the
  // last token of the context must run to give the first guess's logits.
  const std::vector<int32_t>& held = session_.history();
  int64_t common = 0;
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(held.size()), static_cast<int64_t>(context.size()) - 1);
  while (common < limit && held[static_cast<size_t>(common)] == context[static_cast<size_t>(common)]) ++common;
  if (!session_.truncate(common)) common = 0;  // truncate() reset it: refill from the start
  session_.forward(context.subspan(static_cast<size_t>(common)));
  positions_run_ += static_cast<int64_t>(context.size()) - common;
  draft.push_back(session_.greedy_ids().back());
  while (static_cast<int64_t>(draft.size()) < max_tokens) {
    session_.forward(std::span<const int32_t>(&draft.back(), 1));
    ++positions_run_;
    draft.push_back(session_.greedy_ids().back());
  }
}

namespace {

void check_same_vocabulary(const Model& draft, const Model& target, const std::string& path) {
  if (draft.spec().vocab_size != target.spec().vocab_size)
    fail(path, "draft model", "has a vocabulary of {} tokens; the target's has {}", draft.spec().vocab_size,
         target.spec().vocab_size);
  const tok::Tokenizer* a = draft.tokenizer();
  const tok::Tokenizer* b = target.tokenizer();
  if (!a || !b) return;  // ids alone: the sizes agree
  const size_t n = std::min(a->vocab_size(), b->vocab_size());
  if (a->vocab_size() != b->vocab_size())
    fail(path, "draft model", "has a tokenizer of {} tokens; the target's has {}", a->vocab_size(), b->vocab_size());
  for (size_t id = 0; id < n; ++id)
    if (a->token_to_piece(static_cast<int32_t>(id)) != b->token_to_piece(static_cast<int32_t>(id)))
      fail(path, "draft model", "token {} is '{}' there but '{}' in the target: not the same tokenizer", id,
           a->token_to_piece(static_cast<int32_t>(id)), b->token_to_piece(static_cast<int32_t>(id)));
}

}  // namespace

std::shared_ptr<const Model> shared_draft_model(const std::string& path, const Model& target) {
  // Kept for the process: a reload per request would cost more than any
  // draft saves. Each draft remembers the targets whose vocabulary it was
  // checked against (a token-by-token comparison, once per pair).
  struct Loaded {
    std::shared_ptr<const Model> model;
    std::set<std::string> checked_targets;  // Model::identity()
  };
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  std::lock_guard lock(mutex);
  auto it = loaded.find(path);
  if (it == loaded.end()) {
    LoadOptions options;
    options.threads = target.pool().threads();
    options.kv_type = target.kv_type();
    it = loaded.emplace(path, Loaded{load_model_for_running(path, options, /*reference=*/false), {}}).first;
  }
  Loaded& d = it->second;
  if (!d.checked_targets.contains(target.identity())) {
    check_same_vocabulary(*d.model, target, path);
    d.checked_targets.insert(target.identity());
  }
  return d.model;
}

}  // namespace tessera

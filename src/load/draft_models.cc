#include "load/draft_models.h"

#include <map>
#include <mutex>
#include <set>

#include "core/error.h"
#include "load/model_loader.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
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
    options.arithmetic = target.arithmetic();
    it = loaded.emplace(path, Loaded{load_model_for_running(path, options, /*reference=*/false), {}}).first;
  }
  Loaded& d = it->second;
  if (!d.checked_targets.contains(target.identity())) {
    check_same_vocabulary(*d.model, target, path);
    d.checked_targets.insert(target.identity());
  }
  return d.model;
}

void load_draft_model(GenerateOptions& options, const Model& target) {
  SpeculativeOptions& s = options.speculative;
  if (uses_draft_model(s.mode) && !s.draft_model)
    s.draft_model = shared_draft_model(s.draft_path, target);
}

}  // namespace tessera

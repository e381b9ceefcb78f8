#include "generation/lookup_then_model_drafter.h"

#include "core/error.h"

namespace tessera {

LookupThenModelDrafter::LookupThenModelDrafter(std::unique_ptr<ModelDrafter> model, int64_t min_lookup)
    : model_(std::move(model)), min_lookup_(min_lookup) {
  if (!model_) fail("options", "speculative", "lookup+draft needs a draft model");
  if (min_lookup_ < 1) fail("options", "speculative", "the shortest lookup proposal must be at least 1, got {}", min_lookup_);
}

bool LookupThenModelDrafter::propose_lookup(std::span<const int32_t> context, int64_t max_tokens,
                                            std::vector<int32_t>& draft) {
  lookup_.propose(context, max_tokens, draft);
  if (!draft.empty() && static_cast<int64_t>(draft.size()) >= std::min(min_lookup_, max_tokens)) {
    ++lookup_proposals_;
    return true;
  }
  draft.clear();
  return false;
}

void LookupThenModelDrafter::propose_model(std::span<const int32_t> context, int64_t max_tokens,
                                           std::vector<int32_t>& draft) {
  model_->propose(context, max_tokens, draft);
  if (!draft.empty()) ++model_proposals_;
}

void LookupThenModelDrafter::propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) {
  if (!propose_lookup(context, max_tokens, draft)) propose_model(context, max_tokens, draft);
}

}  // namespace tessera

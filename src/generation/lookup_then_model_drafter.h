// Prompt lookup first, a draft model otherwise: a drafter
// (generation/drafter.h) for text that is partly a copy of its context
// (code being edited, a document being revised) and partly new. Where the
// context's last tokens occurred before, prompt lookup's guess costs
// nothing and is usually right for many tokens; elsewhere the draft model
// guesses (generation/model_drafter.h), at a draft step per token. The
// draft model's session follows the text only when it is asked, catching
// up on what lookup's turns added in one call then.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "generation/lookup_drafter.h"
#include "generation/model_drafter.h"

namespace tessera {

class LookupThenModelDrafter : public Drafter {
 public:
  // min_lookup: the shortest lookup proposal taken (a lone repeated token
  // is a weak hint: the draft model guesses instead).
  explicit LookupThenModelDrafter(std::unique_ptr<ModelDrafter> model, int64_t min_lookup = 2);

  void prepare(std::span<const int32_t> context) override { model_->prepare(context); }
  // The draft model's cost (what a proposal costs when lookup has none).
  DraftingCost predicted_cost(std::span<const int32_t> context, double target_decode_s) const override {
    return model_->predicted_cost(context, target_decode_s);
  }
  // Lookup's proposal if it has one of min_lookup tokens or more (true),
  // else the draft model's.
  void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) override;
  // The two halves, for a caller that decides between them
  // (SpeculativeDecoder: lookup's proposals always, the draft model's when
  // the controller affords them). propose_lookup: true when `draft` holds
  // a proposal to take.
  bool propose_lookup(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft);
  void propose_model(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft);

  // Proposals each drafter made.
  int64_t lookup_proposals() const { return lookup_proposals_; }
  int64_t model_proposals() const { return model_proposals_; }

 private:
  LookupDrafter lookup_;
  std::unique_ptr<ModelDrafter> model_;
  int64_t min_lookup_;
  int64_t lookup_proposals_ = 0, model_proposals_ = 0;
};

}  // namespace tessera

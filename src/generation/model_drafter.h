// A draft model: a drafter (generation/drafter.h) that runs a second, cheaper
// model sharing the target's tokenizer (a smaller model of the family, or a
// lut2 / lut3 bundle of the target itself) greedily for k tokens.
//
// The drafter keeps its own session of the draft model, which prefills the
// prompt right after the target does (prepare(): part of the time to the
// first token, as llama.cpp's draft prefill is). Each proposal first
// brings that session to the context: it keeps the longest common prefix of
// what the session holds and the context (so the drafts the target
// rejected, and only they, are cut: Session::truncate; a sliding ring that
// cannot be cut there is reset and refilled), runs the rest of the context
// in one call, then decodes k - 1 more tokens. Its guesses are one-hot (the
// draft model's argmax), which is what speculative sampling's one-hot
// acceptance assumes (generation/speculative.h).
//
// The draft model is loaded by the caller (load/draft_models.h) and handed in.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "generation/drafter.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace tessera {

class ModelDrafter : public Drafter {
 public:
  // context_length: the draft session's, at least the target's.
  // size_ratio: the draft's weight bytes over the target's, what its steps
  // are assumed to cost relative to the target's until they are timed.
  ModelDrafter(std::shared_ptr<const Model> draft, int64_t context_length, double size_ratio = 1.0);

  // The draft model's prefill of the prompt (its one long catch-up), so
  // that the first proposal catches up on one token.
  void prepare(std::span<const int32_t> context) override;
  void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) override;
  // The catch-up (context positions the session does not hold) at the
  // measured cost per position, then draft steps at their measured cost;
  // before any is timed, each position and step at size_ratio of the
  // target's decode step (decode is bound by the weight bytes).
  DraftingCost predicted_cost(std::span<const int32_t> context, double target_decode_s) const override;

  // Positions the draft session ran over all proposals (prefix catch-up and drafts).
  int64_t positions_run() const { return positions_run_; }

 private:
  // Context positions the session already holds (what propose() keeps).
  int64_t common_prefix(std::span<const int32_t> context) const;
  // The held tokens that equal the context's, at most `limit` of them.
  int64_t common_prefix(std::span<const int32_t> context, int64_t limit) const;

  std::shared_ptr<const Model> model_;
  Session session_;
  double size_ratio_;
  int64_t positions_run_ = 0;
  double catch_up_s_per_position_ = 0, step_s_ = 0;  // running means (0: not timed yet)
};


}  // namespace tessera

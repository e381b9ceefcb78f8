// A drafter guesses the next few tokens of a generation cheaply, for
// speculative decoding (generation/speculative.h) to verify in one batched call
// of the target model. A guess is only ever a proposal: the verification
// keeps exactly the tokens the target itself would have produced, so a
// drafter decides the speed, never the output.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

// What a proposal is expected to cost, in seconds: `fixed` for the first
// drafted token (a draft model's catch-up on the context included) and
// `per_token` for each further one.
struct DraftingCost {
  double fixed = 0, per_token = 0;
  double of(int64_t k) const { return k > 0 ? fixed + per_token * static_cast<double>(k - 1) : 0; }
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // The expected cost of proposing after `context` (as propose() would
  // take it), given the target's decode step of target_decode_s seconds.
  // Prompt lookup: nothing worth counting.
  virtual DraftingCost predicted_cost(std::span<const int32_t> context, double target_decode_s) const {
    (void)context;
    (void)target_decode_s;
    return {};
  }
  // Called once after the prompt's prefill, `context` the tokens the
  // target then holds: a drafter with state of its own brings it there
  // (charged to the time to the first token, not to decode). Prompt lookup:
  // nothing to do.
  virtual void prepare(std::span<const int32_t> context) { (void)context; }
  // Replaces `draft` with up to max_tokens guesses of the tokens that follow
  // `context` (every token so far: the session's history, the prompt and the
  // generated tokens, the last of them not yet run). Empty: no guess.
  virtual void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) = 0;
};

}  // namespace tessera

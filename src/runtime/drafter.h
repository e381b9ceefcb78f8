// A drafter guesses the next few tokens of a generation cheaply, for
// speculative decoding (runtime/speculative.h) to verify in one batched call
// of the target model. A guess is only ever a proposal: the verification
// keeps exactly the tokens the target itself would have produced, so a
// drafter decides the speed, never the output.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Replaces `draft` with up to max_tokens guesses of the tokens that follow
  // `context` (every token so far: the session's history, the prompt and the
  // generated tokens, the last of them not yet run). Empty: no guess.
  virtual void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) = 0;
};

}  // namespace tessera

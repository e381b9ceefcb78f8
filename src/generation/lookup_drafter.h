// Prompt lookup: a drafter (generation/drafter.h) that needs no model. Text
// being generated often repeats text already in the context — a document
// being rewritten or quoted, code being edited, names and phrases used
// again — so when the context's last n tokens occurred earlier, the tokens
// that followed that occurrence are a good guess for what follows now.
//
// propose() tries n = max_ngram down to min_ngram (a longer match is a
// stronger hint) and takes, for the first n that matches, the most recent
// earlier occurrence (the nearest text is the likeliest to be repeated),
// proposing what followed it: up to max_tokens tokens, fewer when the
// context ends first.
//
// The search scans the context backwards: O(context · n) token comparisons
// per proposal, a few microseconds for thousands of tokens, against the
// milliseconds of a forward call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "generation/drafter.h"

namespace tessera {

class LookupDrafter : public Drafter {
 public:
  // 1 <= min_ngram <= max_ngram; throws Error otherwise.
  explicit LookupDrafter(int max_ngram = 3, int min_ngram = 1);

  void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) override;

  // The n of the last proposal's match (0: none).
  int last_match_length() const { return last_n_; }

 private:
  int max_ngram_, min_ngram_;
  int last_n_ = 0;
};

}  // namespace tessera

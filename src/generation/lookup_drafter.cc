#include "generation/lookup_drafter.h"

#include <algorithm>

#include "core/error.h"

namespace tessera {

LookupDrafter::LookupDrafter(int max_ngram, int min_ngram) : max_ngram_(max_ngram), min_ngram_(min_ngram) {
  if (min_ngram < 1 || max_ngram < min_ngram)
    fail("speculative", "ngram", "lookup needs 1 <= min n ({}) <= max n ({})", min_ngram, max_ngram);
}

void LookupDrafter::propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) {
  draft.clear();
  last_n_ = 0;
  const int64_t length = static_cast<int64_t>(context.size());
  if (max_tokens <= 0) return;
  for (int64_t n = std::min<int64_t>(max_ngram_, length - 1); n >= min_ngram_; --n) {
    const std::span<const int32_t> suffix = context.subspan(length - n);
    // Earlier occurrences start at i <= length - n - 1, so that at least one
    // token follows them; the latest first.
    for (int64_t i = length - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + i)) continue;
      const int64_t from = i + n;
      int64_t to = std::min(length, from + max_tokens);
      // A media span's history entries (negative, runtime/session.h) are no tokens to propose.
      to = std::find_if(context.begin() + from, context.begin() + to, [](int32_t id) { return id < 0; }) -
           context.begin();
      if (to == from) continue;
      draft.assign(context.begin() + from, context.begin() + to);
      last_n_ = static_cast<int>(n);
      return;
    }
  }
}

}  // namespace tessera

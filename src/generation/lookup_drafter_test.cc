#include "generation/lookup_drafter.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

std::vector<int32_t> propose(LookupDrafter& d, const std::vector<int32_t>& context, int64_t max_tokens) {
  std::vector<int32_t> draft = {99};  // replaced, never appended to
  d.propose(context, max_tokens, draft);
  return draft;
}

TEST(LookupDrafter, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  LookupDrafter d;
  // "1 2 3" occurs at 0 (followed by 4 5) and at 5 (followed by 7 8); the
  // context ends with "1 2 3": the latest earlier occurrence wins.
  const std::vector<int32_t> ctx = {1, 2, 3, 4, 5, 1, 2, 3, 7, 8, 9, 1, 2, 3};
  EXPECT_EQ(propose(d, ctx, 3), (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ(d.last_match_length(), 3);
  EXPECT_EQ(propose(d, ctx, 1), (std::vector<int32_t>{7}));
}

TEST(LookupDrafter, PrefersTheLongestMatchingNgram) {
  LookupDrafter d;
  // The last token 3 occurs latest at 6 (followed by 9), but "2 3" only at 1
  // (followed by 4): the 2-gram's continuation is proposed.
  const std::vector<int32_t> ctx = {1, 2, 3, 4, 5, 6, 3, 9, 2, 3};
  EXPECT_EQ(propose(d, ctx, 2), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(d.last_match_length(), 2);
}

TEST(LookupDrafter, StopsAtTheEndOfTheContext) {
  LookupDrafter d;
  // A repeating pattern: "5 6" occurred at 2; what follows runs to the end.
  const std::vector<int32_t> ctx = {5, 6, 5, 6};
  EXPECT_EQ(propose(d, ctx, 8), (std::vector<int32_t>{5, 6}));
}

TEST(LookupDrafter, ProposesNothingWithoutAMatch) {
  LookupDrafter d;
  EXPECT_TRUE(propose(d, {1, 2, 3, 4}, 8).empty());
  EXPECT_EQ(d.last_match_length(), 0);
  EXPECT_TRUE(propose(d, {7}, 8).empty());
  EXPECT_TRUE(propose(d, {}, 8).empty());
  EXPECT_TRUE(propose(d, {1, 1, 1}, 0).empty());
}

TEST(LookupDrafter, MinimumNgramLimitsTheMatches) {
  LookupDrafter d(3, 2);
  // Only the last token (4) repeats: no 2-gram match, so nothing.
  EXPECT_TRUE(propose(d, {4, 8, 9, 4}, 4).empty());
  LookupDrafter one(3, 1);
  EXPECT_EQ(propose(one, {4, 8, 9, 4}, 4), (std::vector<int32_t>{8, 9, 4}));
}

TEST(LookupDrafter, RejectsBadNgramRanges) {
  EXPECT_THROW(LookupDrafter(2, 0), Error);
  EXPECT_THROW(LookupDrafter(1, 2), Error);
}

}  // namespace
}  // namespace tessera

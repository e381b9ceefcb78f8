#include "engine/slot_choice.h"

#include <gtest/gtest.h>

namespace tessera::engine {
namespace {

TEST(CommonPrefixLength, CountsEqualLeadingTokens) {
  const std::vector<int32_t> a{1, 2, 3, 4}, b{1, 2, 9}, empty;
  EXPECT_EQ(common_prefix_length(a, b), 2);
  EXPECT_EQ(common_prefix_length(a, a), 4);
  EXPECT_EQ(common_prefix_length(a, empty), 0);
}

// Media entries (negative, runtime/session.h) compare as tokens, but a
// prefix never ends inside a run of them: the same image is shared whole,
// and two images that happen to agree on a first entry share nothing of it.
TEST(CommonPrefixLength, NeverEndsInsideAMediaSpan) {
  const std::vector<int32_t> one{1, 2, -5, -6, -7, 3}, same{1, 2, -5, -6, -7, 4}, other{1, 2, -5, -9, -7, 3};
  EXPECT_EQ(common_prefix_length(one, same), 5);
  EXPECT_EQ(common_prefix_length(one, other), 2);
  EXPECT_EQ(common_prefix_length(one, std::vector<int32_t>{1, 2, -5, -6}), 2);  // a history cut mid-span
  EXPECT_EQ(common_prefix_length(std::vector<int32_t>{1, 2, -5}, one), 2);
}

TEST(ChooseSlot, KeepsAMediaSpanWholeUnderTheLastTokenCap) {
  const std::vector<int32_t> h{1, -5, -6, -7}, prompt{1, -5, -6, -7};
  const std::vector<SlotView> slots{{h, 1}};
  EXPECT_EQ(choose_slot(slots, prompt).reusable, 1);
}

TEST(ChooseSlot, PicksTheLongestSharedPrefix) {
  const std::vector<int32_t> h0{1, 2, 3}, h1{1, 2, 3, 4, 5}, prompt{1, 2, 3, 4, 6, 7};
  const std::vector<SlotView> slots{{h0, 5}, {h1, 1}};
  const SlotChoice c = choose_slot(slots, prompt);
  EXPECT_EQ(c.slot, 1u);
  EXPECT_EQ(c.reusable, 4);
}

TEST(ChooseSlot, KeepsTheLastPromptTokenToRun) {
  const std::vector<int32_t> h{1, 2, 3, 4}, prompt{1, 2, 3};
  const std::vector<SlotView> slots{{h, 1}};
  EXPECT_EQ(choose_slot(slots, prompt).reusable, 2);
}

TEST(ChooseSlot, WithoutASharedPrefixTakesAnEmptyThenTheLeastRecentlyUsedSlot) {
  const std::vector<int32_t> h0{5, 6}, h1{7, 8}, empty, prompt{1, 2};
  std::vector<SlotView> slots{{h0, 3}, {empty, 0}, {h1, 2}};
  EXPECT_EQ(choose_slot(slots, prompt).slot, 1u);
  slots[1] = {h1, 4};
  EXPECT_EQ(choose_slot(slots, prompt).slot, 2u);
  EXPECT_EQ(choose_slot(slots, prompt).reusable, 0);
}

}  // namespace
}  // namespace tessera::engine

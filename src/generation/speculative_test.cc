#include "generation/speculative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "core/error.h"

namespace tessera {
namespace {

TEST(AcceptedPrefix, StopsAtTheFirstDisagreement) {
  const std::vector<int32_t> draft = {5, 6, 7};
  EXPECT_EQ(accepted_prefix(draft, std::vector<int32_t>{5, 6, 7, 8}), 3);  // all, then 8 follows
  EXPECT_EQ(accepted_prefix(draft, std::vector<int32_t>{5, 6, 9, 7}), 2);
  EXPECT_EQ(accepted_prefix(draft, std::vector<int32_t>{1, 6, 7, 8}), 0);  // later agreement does not count
  EXPECT_EQ(accepted_prefix({}, std::vector<int32_t>{4}), 0);
  EXPECT_THROW(accepted_prefix(draft, std::vector<int32_t>{5, 6, 7}), Error);
}

TEST(SpeculativeSample, AcceptsWithTheDraftsProbability) {
  const std::vector<std::pair<int32_t, double>> p = {{3, 0.5}, {8, 0.3}, {1, 0.2}};
  EXPECT_TRUE(speculative_sample(p, 8, 0.29, 0.0).accepted);
  const SpeculativeChoice c = speculative_sample(p, 8, 0.31, 0.0);
  EXPECT_FALSE(c.accepted);
  EXPECT_EQ(c.token, 3);  // u_draw 0: the first of p without the draft
  // Rejected: p without 8 is {3: 0.5, 1: 0.2} / 0.7; u_draw 0.8 lands on 1.
  EXPECT_EQ(speculative_sample(p, 8, 0.9, 0.8).token, 1);
  // A draft outside p is never accepted; the draw is then from p itself.
  EXPECT_FALSE(speculative_sample(p, 42, 0.0, 0.0).accepted);
  EXPECT_EQ(speculative_sample(p, 42, 0.0, 0.6).token, 8);
}

// The output of speculative sampling is distributed as p whatever the
// draft: a chi-square goodness-of-fit test per drafted token, over 60,000
// draws each (the critical value is the 1e-6 tail of chi-square with 4
// degrees of freedom, so a correct implementation fails with probability
// 1e-6 per draft, and the draws are seeded). A wrong rule — accepting
// every draft, or resampling from p including the draft — is off by
// thousands.
TEST(SpeculativeSample, OutputIsDistributedAsTheTarget) {
  const std::vector<std::pair<int32_t, double>> p = {{0, 0.4}, {1, 0.25}, {2, 0.2}, {3, 0.1}, {4, 0.05}};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int n = 60000;
  const double critical = 33.38;  // chi-square, 4 dof, p = 1e-6
  for (int32_t draft : {0, 2, 4, 9}) {
    std::map<int32_t, int> count;
    int accepted = 0;
    for (int i = 0; i < n; ++i) {
      const SpeculativeChoice c = speculative_sample(p, draft, uniform(rng), uniform(rng));
      ++count[c.token];
      accepted += c.accepted;
    }
    double chi2 = 0;
    for (const auto& [id, prob] : p) {
      const double expected = n * prob;
      chi2 += (count[id] - expected) * (count[id] - expected) / expected;
    }
    EXPECT_LT(chi2, critical) << "draft " << draft;
    EXPECT_EQ(count.size(), p.size()) << "draft " << draft;
    // The acceptance rate is p(draft).
    double p_draft = 0;
    for (const auto& [id, prob] : p) p_draft += id == draft ? prob : 0;
    EXPECT_NEAR(static_cast<double>(accepted) / n, p_draft, 0.01) << "draft " << draft;
  }
}

TEST(SpeculativeMode, ParsesTheModeNames) {
  EXPECT_EQ(parse_speculative_mode("off"), SpeculativeMode::Off);
  EXPECT_EQ(parse_speculative_mode("lookup"), SpeculativeMode::Lookup);
  EXPECT_EQ(parse_speculative_mode("auto"), SpeculativeMode::Auto);
  for (SpeculativeMode m : {SpeculativeMode::Off, SpeculativeMode::Lookup, SpeculativeMode::Auto})
    EXPECT_EQ(parse_speculative_mode(speculative_mode_name(m)), m);
  EXPECT_THROW(parse_speculative_mode("draft"), Error);
}

}  // namespace
}  // namespace tessera

#include "runtime/draft_controller.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

TEST(DraftController, PlainDecodeUntilADecodeStepIsTimed) {
  DraftController c;
  EXPECT_EQ(c.draft_length(8), 0);
  c.record_decode(0.010);
  EXPECT_GT(c.draft_length(8), 0);
  EXPECT_EQ(c.draft_length(0), 0);  // nothing proposed
}

TEST(DraftController, ExpectedTokensFollowTheGeometricSeries) {
  DraftController c;  // prior acceptance 0.5
  EXPECT_DOUBLE_EQ(c.acceptance(), 0.5);
  EXPECT_DOUBLE_EQ(c.expected_tokens(0), 1.0);
  EXPECT_DOUBLE_EQ(c.expected_tokens(2), 1.75);
}

// Cheap verify calls and drafts that are always accepted: the controller
// drafts as many as it may.
TEST(DraftController, DraftsLongWhenDraftsAreAcceptedAndVerifyIsCheap) {
  DraftController c;
  c.record_decode(0.010);
  for (int i = 0; i < 6; ++i) {
    const int64_t k = c.draft_length(8);
    ASSERT_GT(k, 0);
    c.record_verify(k, k, 0.010 + 0.001 * k);
  }
  EXPECT_GT(c.acceptance(), 0.9);
  EXPECT_NEAR(c.row_seconds(), 0.001, 1e-9);
  EXPECT_EQ(c.draft_length(8), 8);
  EXPECT_EQ(c.draft_length(3), 3);
}

// Drafts that are always rejected: after a few verify calls the controller
// stops speculating, then probes with short drafts, ever more rarely.
TEST(DraftController, TurnsOffAfterRejectionsAndProbesEverMoreRarely) {
  DraftControlOptions o;
  o.probe_interval = 4;
  o.max_probe_interval = 16;
  DraftController c(o);
  c.record_decode(0.010);
  int verifies = 0;
  for (int i = 0; i < 10; ++i) {
    const int64_t k = c.draft_length(8);
    if (k == 0) break;
    c.record_verify(k, 0, 0.010 + 0.002 * k);
    ++verifies;
  }
  EXPECT_LE(verifies, 4);
  EXPECT_LT(c.relative_rate(1), 1.0);
  // Off: a probe of probe_tokens drafts after 4 plain steps with proposals,
  // then after 8, then 16, then 16 (the cap).
  std::vector<int> gaps;
  int since = 1;  // the call that returned 0 above was the first plain step
  for (int step = 0; step < 60; ++step) {
    ++since;
    const int64_t k = c.draft_length(8);
    if (k == 0) continue;
    EXPECT_EQ(k, o.probe_tokens);
    c.record_verify(k, 0, 0.010 + 0.002 * k);
    gaps.push_back(since);
    since = 0;
  }
  ASSERT_GE(gaps.size(), 4u);
  EXPECT_EQ(gaps[0], 4);
  EXPECT_EQ(gaps[1], 8);
  EXPECT_EQ(gaps[2], 16);
  EXPECT_EQ(gaps[3], 16);
}

// Verify calls that cost as much per drafted row as a decode step never pay
// (E(k) <= k + 1): the controller stays off whatever the acceptance.
TEST(DraftController, StaysOffWhenVerifyCostsAsMuchAsDecoding) {
  DraftController c;
  c.record_decode(0.010);
  const int64_t k = c.draft_length(4);
  ASSERT_GT(k, 0);  // the prior says try
  c.record_verify(k, k, 0.010 * (k + 1));
  EXPECT_NEAR(c.row_seconds(), 0.010, 1e-12);
  EXPECT_EQ(c.draft_length(4), 0);
}

TEST(DraftController, ChecksItsOptions) {
  DraftControlOptions o;
  o.max_draft = 0;
  EXPECT_THROW(DraftController{o}, Error);
  o = {};
  o.prior_acceptance = 1;
  EXPECT_THROW(DraftController{o}, Error);
  o = {};
  o.probe_interval = 0;
  EXPECT_THROW(DraftController{o}, Error);
}

}  // namespace
}  // namespace tessera

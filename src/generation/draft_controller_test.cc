#include "generation/draft_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace tessera {
namespace {

// Two timed plain steps (the first of a request does not count).
void warm(DraftController& c, double seconds) {
  c.record_decode(5 * seconds);  // cold: ignored
  c.record_decode(seconds);
}

TEST(DraftController, PlainDecodeUntilTwoDecodeStepsAreTimed) {
  DraftControlOptions o;
  o.prior_row_cost = 0.15;  // verify rows cheap enough that the prior α pays
  DraftController c(o);
  EXPECT_EQ(c.draft_length(8), 0);
  c.record_decode(0.050);
  EXPECT_EQ(c.draft_length(8), 0);
  c.record_decode(0.010);
  EXPECT_DOUBLE_EQ(c.decode_seconds(), 0.010);  // the cold first step is not in it
  EXPECT_GT(c.draft_length(8), 0);
  EXPECT_EQ(c.draft_length(0), 0);  // nothing proposed
}

TEST(DraftController, ExpectedTokensFollowTheGeometricSeries) {
  DraftController c;  // prior acceptance 0.5
  EXPECT_DOUBLE_EQ(c.acceptance(), 0.5);
  EXPECT_DOUBLE_EQ(c.expected_tokens(0), 1.0);
  EXPECT_DOUBLE_EQ(c.expected_tokens(2), 1.75);
}

// The verify cost is the least-squares line through the calls: a fixed
// part above a decode step and a part per drafted row.
TEST(DraftController, FitsTheVerifyCostToTheCalls) {
  DraftController c;
  warm(c, 0.010);
  EXPECT_NEAR(c.verify_seconds(4), 0.010 * (1 + 0.5 * 4), 1e-12);  // the prior
  for (int64_t k : {2, 5, 3, 8, 1, 6}) c.record_verify(k, k, 0.014 + 0.002 * k);
  EXPECT_NEAR(c.verify_seconds(1), 0.016, 1e-9);
  EXPECT_NEAR(c.verify_seconds(8), 0.030, 1e-9);
}

// Cheap verify calls and drafts that are always accepted: the controller
// drafts as many as it may, with a plain step every refresh_interval steps.
TEST(DraftController, DraftsLongWhenDraftsAreAcceptedAndVerifyIsCheap) {
  DraftControlOptions o;
  o.refresh_interval = 10;
  o.prior_row_cost = 0.15;
  DraftController c(o);
  warm(c, 0.010);
  int plain = 0;
  for (int i = 0; i < 30; ++i) {
    const int64_t k = c.draft_length(8);
    if (k == 0) {
      ++plain;
      c.record_decode(0.010);
      continue;
    }
    c.record_verify(k, k, 0.011 + 0.001 * k);
  }
  EXPECT_EQ(plain, 3);
  EXPECT_GT(c.acceptance(), 0.9);
  EXPECT_EQ(c.draft_length(8), 8);
  EXPECT_EQ(c.draft_length(3), 3);
}

// Drafts that are always rejected: after a few verify calls the controller
// stops speculating, then probes with short drafts, ever more rarely.
TEST(DraftController, TurnsOffAfterRejectionsAndProbesEverMoreRarely) {
  DraftControlOptions o;
  o.probe_interval = 4;
  o.max_probe_interval = 16;
  o.refresh_interval = 1000;
  o.prior_row_cost = 0.15;
  o.loss_budget = 1;  // the probes alone (the ledger has its own test)
  DraftController c(o);
  warm(c, 0.010);
  int verifies = 0;
  for (int i = 0; i < 10; ++i) {
    const int64_t k = c.draft_length(8);
    if (k == 0) break;
    c.record_verify(k, 0, 0.012 + 0.002 * k);
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
    c.record_verify(k, 0, 0.012 + 0.002 * k);
    gaps.push_back(since);
    since = 0;
  }
  ASSERT_GE(gaps.size(), 4u);
  EXPECT_EQ(gaps[0], 4);
  EXPECT_EQ(gaps[1], 8);
  EXPECT_EQ(gaps[2], 16);
  EXPECT_EQ(gaps[3], 16);
  // A probe that accepts halves the wait: the next comes after 8.
  for (int step = 1;; ++step) {
    const int64_t k = c.draft_length(8);
    if (k == 0) continue;
    c.record_verify(k, 1, 0.012 + 0.002 * k);
    break;
  }
  int wait = 1;
  while (c.draft_length(8) == 0) ++wait;
  EXPECT_EQ(wait, 8);
}

// Verify calls that cost as much per drafted row as a decode step never pay
// (E(k) <= k + 1): the controller stays off whatever the acceptance.
TEST(DraftController, StaysOffWhenVerifyCostsAsMuchAsDecoding) {
  DraftController c;
  warm(c, 0.010);
  for (int64_t k : {4, 2}) c.record_verify(k, k, 0.010 * (k + 1));
  EXPECT_NEAR(c.verify_seconds(3), 0.040, 1e-9);
  EXPECT_EQ(c.draft_length(4), 0);
}

// A drafter that is always right but costs more than it saves (its verify
// calls, drafting included, take longer than plain steps for their tokens):
// after two such probes the request never speculates again.
TEST(DraftController, StopsForGoodWhenAcceptedDraftsStillCostTooMuch) {
  DraftControlOptions o;
  o.refresh_interval = 1000;
  o.prior_row_cost = 0.15;
  o.loss_budget = 1;  // the probes alone (the ledger has its own test)
  DraftController c(o);
  warm(c, 0.010);
  int verifies = 0;
  for (int step = 0; step < 2000; ++step) {
    const int64_t k = c.draft_length(8);
    if (k == 0) continue;
    c.record_verify(k, k, 0.015 * (k + 1));  // every draft accepted, 1.5 decode steps per token
    ++verifies;
  }
  EXPECT_LE(verifies, 4);
  // A cheap drafter whose probes fail for acceptance is not stopped: it keeps probing.
  DraftController lookup(o);
  warm(lookup, 0.010);
  int probes = 0;
  for (int step = 0; step < 2000; ++step) {
    const int64_t k = lookup.draft_length(8);
    if (k == 0) continue;
    lookup.record_verify(k, 0, 0.011);
    ++probes;
  }
  EXPECT_GE(probes, 10);
}

// The ledger: drafts the estimates favour but the text rejects (a prior α
// of 0.9, every draft wrong), verify rows at half a decode step. Whether it
// probes or not, after every step the request's time stays within the
// budget of plain decode's for the same tokens, plus the allowance.
TEST(DraftController, NeverLosesMoreThanTheBudget) {
  for (const bool probes : {true, false}) {
    DraftControlOptions o;
    o.prior_acceptance = 0.9;
    o.probes = probes;
    DraftController c(o);
    const double c1 = 0.010;
    warm(c, c1);
    double elapsed = 2 * c1;
    int64_t tokens = 2, verifies = 0;
    for (int step = 0; step < 3000; ++step) {
      const int64_t k = c.draft_length(8);
      if (k == 0) {
        c.record_decode(c1);
        elapsed += c1;
        ++tokens;
      } else {
        const double t = c1 * (1 + 0.5 * static_cast<double>(k));
        c.record_verify(k, 0, t);
        elapsed += t;
        ++tokens;
        ++verifies;
      }
      ASSERT_LE(elapsed, (1 + o.loss_budget) * static_cast<double>(tokens) * c1 + o.initial_allowance * c1 + 1e-9)
          << "step " << step;
      EXPECT_EQ(c.tokens(), tokens);
      EXPECT_NEAR(c.lost_seconds(), elapsed - static_cast<double>(tokens) * c1, 1e-9);
    }
    EXPECT_GT(verifies, 0);  // it did try (the budget, not a refusal, bounds the loss)
    if (probes) EXPECT_GT(verifies, 5);
  }
}

// A run of accepted drafts buys room for longer calls: from the first
// call (capped by the allowance) the lengths grow to max_draft.
TEST(DraftController, RampsUpAsAcceptedDraftsPayForLongerCalls) {
  DraftController c;
  const double c1 = 0.010;
  warm(c, c1);
  for (int i = 0; i < 4; ++i) c.record_shadow(8, 8);  // a verbatim copy, seen while off
  std::vector<int64_t> ks;
  for (int step = 0; step < 12; ++step) {
    const int64_t k = c.draft_length(8);
    if (k == 0) {
      c.record_decode(c1);
      continue;
    }
    ks.push_back(k);
    c.record_verify(k, k, c1 * (1 + 0.5 * static_cast<double>(k)));
  }
  ASSERT_GE(ks.size(), 4u);
  EXPECT_LE(ks[0], 2);  // one decode step of allowance: c(2) − c1 = c1
  EXPECT_TRUE(std::is_sorted(ks.begin(), ks.end()));
  EXPECT_EQ(ks.back(), 8);
}

// Shadow drafts move α while nothing is verified: proposals that plain
// decoding confirms turn speculation on, ones it refutes keep it off, and
// with probes off a request whose proposals never match verifies nothing.
TEST(DraftController, ShadowDraftsSteerWithoutVerifying) {
  DraftControlOptions o;
  o.probes = false;
  const double c1 = 0.010;
  DraftController off(o);
  warm(off, c1);
  int verifies = 0;
  for (int step = 0; step < 1000; ++step) {
    if (off.draft_length(8) > 0) ++verifies;
    off.record_decode(c1);
    off.record_shadow(8, 0);
  }
  EXPECT_EQ(verifies, 0);
  EXPECT_LT(off.acceptance(), 0.01);
  DraftController on(o);
  warm(on, c1);
  int shadows = 0;
  for (; on.draft_length(8) == 0 && shadows < 10; ++shadows) {
    on.record_decode(c1);
    on.record_shadow(4, 4);
  }
  EXPECT_GE(shadows, 1);  // the prior α alone does not pay for half-step rows
  EXPECT_LE(shadows, 3);
  EXPECT_GT(on.acceptance(), 0.8);
}

// A draft model's proposals cost more the longer it does not follow (its
// catch-up): with probe_first the first affordable step probes, where the
// default waits probe_interval plain steps.
TEST(DraftController, ProbeFirstProbesAtTheFirstAffordableStep) {
  const DraftingCost draft_model{0.004, 0.004};  // a step of a draft model at 0.4 of the target's
  for (bool first : {false, true}) {
    DraftControlOptions o;
    o.probe_first = first;
    DraftController c(o);
    warm(c, 0.010);
    int64_t plain = 0;
    while (c.draft_length(8, draft_model) == 0 && plain < 64) {
      c.record_decode(0.010);
      ++plain;
    }
    EXPECT_EQ(plain, first ? 0 : o.probe_interval - 1) << first;
  }
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

// Adaptive control of speculative decoding (generation/speculative.h): how
// many drafted tokens to verify at each step — none meaning a plain decode
// step — from what this request has measured so far, so that speculation
// is used where it pays and costs next to nothing where it does not.
//
// The model. A verify call of k drafted tokens (k + 1 rows) costs
//   c(k) = c0 + m · k,
// a line fitted by least squares to this request's own verify calls (their
// wall time against k, each weighted by decay^age, so the fit follows the
// machine's current load); c0 is more than a decode step's c1 (the batched
// kernels' fixed costs), so the fit does not pin the line at c1. With too
// few distinct k the slope is the prior m = prior_row_cost · c1 and the
// line goes through the mean of the calls. c1 is the running mean of plain
// decode steps (the first, cold step of a request not counted; one plain
// step is forced every refresh_interval steps so that c1 follows the load
// while speculation runs). If each drafted token is accepted with
// probability α given that the ones before it were (drafts are accepted as
// a prefix), a verify call yields on average
//   E(k) = 1 + α + α² + ... + α^k = (1 − α^(k+1)) / (1 − α)
// tokens (the accepted drafts plus the target's own next token), so its
// rate is E(k) / c(k) tokens per second against 1 / c1 for plain decode.
// draft_length() picks the k in 0..available with the best rate, and
// speculates only when that beats plain decode by a margin.
//
// α is estimated from the verify calls as the fraction of accepted among
// decided drafts: a call that accepted a of k drafts decided a + (a < k)
// of them (the drafts after the first rejected one say nothing about α).
// Both counts decay by a factor per call, so α follows the text: high while
// it is copying, low in free text. Acceptance comes in runs (a verbatim
// copy accepts every draft for many calls, free text few), so α is kept
// in two states, after a call that accepted all its drafts and after one
// that did not, each with its own counts, and the state of the last call
// picks the estimate (a two-state Markov model of the text).
//
// Shadow drafts. A cheap drafter (prompt lookup) proposes at every step,
// plain or not; a proposal made before a plain step is compared with the
// tokens plain decoding then produces (SpeculativeDecoder), and the count
// of its drafts that would have been accepted enters α as a verify call's
// would (record_shadow), at no cost. α then follows the text while
// speculation is off, and no probe is needed (probes = false).
//
// Probing. Switched off, the estimate would otherwise never change; so after a run
// of plain steps during which the drafter had proposals, one short verify
// (probe_tokens drafts) measures again. A probe that fails doubles the
// wait before the next one (up to max_probe_interval), one that pays (it
// accepted drafts and its tokens came faster than plain decode's) halves
// it: in free text the probes' cost stays around a percent of the decode
// time. A drafter whose probes are accepted yet slower than plain decode
// (its drafting costs too much: a draft model near the target's size) is
// switched off for the request after max_costly_probes such probes.
//
// The loss budget. Whatever the estimates say, a verify call is made only
// if the request would still be within loss_budget of plain decode's time
// should the call accept nothing. The controller keeps a ledger of the
// time speculation has lost so far,
//   L = Σ over verify calls (its seconds, drafting included,
//       − (accepted + 1) · c1)
// (negative when it has gained), and N, the tokens the request has
// produced. A call of k drafts is affordable when
//   L + c(k) + d(k) − c1 ≤ loss_budget · N · c1 + initial_allowance · c1,
// with d(k) the predicted cost of drafting k tokens (a draft model's catch-up
// and steps, Drafter::predicted_cost; nothing for prompt lookup), c(k) +
// d(k) − c1 being what the call loses if every draft is rejected (it
// still yields the target's own token, as the plain step would). Since L
// stays within the bound after every call, the request as a whole is never
// more than loss_budget slower than plain decode, plus initial_allowance
// decode steps, whenever it ends (up to the error of the cost fit). A run
// of drafts ramps up from short calls, each accepted draft buying room for
// longer ones.
#pragma once

#include <cstdint>

#include "generation/drafter.h"

namespace tessera {

struct DraftControlOptions {
  int64_t max_draft = 8;           // drafted tokens per verify at most
  double prior_acceptance = 0.5;   // α before any verify (as one decided draft of weight 2)
  double decay = 0.7;              // per verify call, of the acceptance counts
  double margin = 0.10;            // speculate when the best rate beats 1 / c1 by this fraction
  double prior_row_cost = 0.5;     // m / c1 before any verify has been timed (quiet Zen 4: 0.48-0.65)
  int64_t probe_interval = 8;      // plain steps with a proposal before a probe
  int64_t max_probe_interval = 128;
  int64_t probe_tokens = 2;
  double cost_decay = 0.9;         // per verify call, of the weights of the cost fit
  int64_t refresh_interval = 32;   // steps between forced plain steps while speculating
  // Probes that accepted at least half their drafts and still came slower
  // than plain decode: the drafting itself costs too much (a draft model
  // near the target's size). After this many the request stops speculating.
  int64_t max_costly_probes = 2;
  // The most speculation may lose against plain decode, as a fraction of
  // its time for the tokens produced (the ledger above; the bound
  // is 3%: with the allowance a 256-token request may lose 1.4%, the rest
  // is room for the cost fit's error).
  double loss_budget = 0.01;
  double initial_allowance = 1.0;  // decode steps the ledger may lose beyond the budget
  // Probe while off (above); false when the drafter's proposals are
  // checked as shadow drafts instead.
  bool probes = true;
  // The first probe at the first step that can afford one, not after
  // probe_interval plain steps: a draft model's catch-up grows with every
  // plain step it does not follow, so it is cheapest to measure at once
  // (right after its prefill of the prompt, SpeculativeDecoder::prepare).
  bool probe_first = false;
};

class DraftController {
 public:
  explicit DraftController(const DraftControlOptions& options = {});

  // How many of the `available` drafted tokens to verify now (0: a plain
  // decode step). Before the first decode step has been timed, 0.
  // `drafting`: what producing the drafts would cost (a draft model's
  // steps; nothing for prompt lookup, whose proposals are already made),
  // added to c(k) in the rates and in the ledger's worst case.
  int64_t draft_length(int64_t available, const DraftingCost& drafting = {});
  // The time of a plain decode step.
  void record_decode(double seconds);
  // The time of a verify call of `drafted` tokens that accepted `accepted`,
  // and the time spent drafting them (in the ledger, not in the fit of c(k)).
  // cold: the call's buffers were grown first (Session::warm_for_as_decode):
  // its time goes to the ledger but not to the fit, which it would skew.
  void record_verify(int64_t drafted, int64_t accepted, double seconds, double drafting_seconds = 0,
                     bool cold = false);
  // A proposal of `drafted` tokens made before plain steps, of which the
  // first `accepted` equal the tokens plain decoding then produced.
  void record_shadow(int64_t drafted, int64_t accepted);

  // α in the current state (after the last verify call's outcome).
  double acceptance() const { return accepted_[state_] / decided_[state_]; }
  double decode_seconds() const { return decode_s_; }
  // The ledger: seconds lost by verify calls against plain steps for the
  // same tokens (negative: gained), and the tokens produced so far.
  double lost_seconds() const { return lost_s_; }
  int64_t tokens() const { return tokens_; }
  // Whether a verify of k drafts (and their drafting, as last given to
  // draft_length) keeps the request within the loss budget even if it
  // accepts none of them.
  bool affordable(int64_t k) const;
  // The fitted verify cost c(k) (before any verify: c1 + prior · c1 · k).
  double verify_seconds(int64_t k) const;
  // Expected tokens per verify of k drafts, and its rate relative to plain
  // decode (E(k) · c1 / (c(k) + drafting of k)).
  double expected_tokens(int64_t k) const;
  double relative_rate(int64_t k) const;

 private:
  DraftControlOptions o_;
  double accepted_[2], decided_[2];  // decayed counts, by state
  int state_ = 0;                    // 1: the last verify call accepted all its drafts
  double decode_s_ = 0;              // c1 (0: not measured yet)
  int64_t decode_samples_ = 0;       // plain steps timed (the first is not used)
  // Decayed sums of the verify calls for the fit: weight, k, k², t, k·t.
  double sw_ = 0, sk_ = 0, skk_ = 0, st_ = 0, skt_ = 0;
  int64_t plain_with_proposal_ = 0;  // plain steps since the last verify while the drafter had proposals
  int64_t since_plain_ = 0;          // steps since the last plain step
  int64_t probe_wait_;
  bool probing_ = false;             // the verify in flight is a probe
  int64_t costly_probes_ = 0;
  // α's decayed counts and state after a proposal's outcome.
  void record_acceptance(int64_t drafted, int64_t accepted);
  DraftingCost drafting_;            // as given to the last draft_length
  double lost_s_ = 0;                // the ledger L
  int64_t tokens_ = 0;               // N
};

}  // namespace tessera

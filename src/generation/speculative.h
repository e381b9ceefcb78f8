// Speculative decoding: a drafter (generation/drafter.h) guesses the next k
// tokens, and one batched call of the target model checks them all.
//
// Why it pays on a CPU: decode is bound by reading the weights, once per
// token. A verify call runs the pending token and the k drafts as k + 1
// rows of one call (Session::forward_as_decode), reading the weights once
// for all of them, and yields the target's own choice after every prefix
// of the drafts. If the first a drafts are what the target would have
// chosen, the call produced a + 1 tokens for little more than the price of
// one decode step.
//
// The verify step, for the pending token t (chosen, not yet run) and
// drafts d1..dk, with the session holding everything before t:
//   1. run [t, d1, ..., dk] with every row's logits; row i holds the
//      target's distribution p_i for the token after t, d1..di;
//   2. accept drafts in order while the target agrees (below); the first
//      disagreement gives the target's own token instead, and if all k are
//      accepted row k gives one more: a + 1 tokens in all;
//   3. roll the session back to t, d1..da (Session::truncate). When a
//      sliding-window layer's ring can no longer be cut there, truncate
//      resets the session and the kept tokens are run again (counted in
//      SpeculativeStats::refeeds).
//
// Acceptance.
//   Greedy (the sampler picks the argmax): di is accepted iff it is the
//   argmax of p_(i-1). Each row is computed with the numerics of a decode
//   step (CallContext::decode_kernels), so the argmax is the one plain
//   decode would compute, and the output is identical to plain greedy
//   decoding, token for token.
//   Sampling (temperature > 0): standard speculative sampling (Leviathan et
//   al. 2023, Chen et al. 2023). With a draft distribution q, d is accepted
//   with probability min(1, p(d) / q(d)); on rejection the token is drawn
//   from norm(max(0, p − q)). Then every token is distributed exactly as
//   p: P(token = x) = q(x) · min(1, p(x)/q(x)) + (1 − Σ_y min(q(y), p(y)))
//   · max(0, p(x) − q(x)) / Σ_y max(0, p(y) − q(y)) = min(q(x), p(x)) +
//   max(0, p(x) − q(x)) = p(x). A deterministic drafter (prompt lookup) has
//   q one-hot at d: accept with probability p(d); on rejection draw from p
//   with d removed, renormalized. p is the sampler's own distribution after
//   the penalty, temperature, top-k, top-p and min-p (Sampler::distribution),
//   so the output is distributed as plain sampling's (not the same draws).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "generation/draft_controller.h"
#include "generation/drafter.h"
#include "generation/output_constraint.h"
#include "generation/sampler.h"
#include "runtime/session.h"

namespace tessera {

enum class SpeculativeMode {
  Off,     // plain decode
  Lookup,  // prompt lookup: every proposal verified, max_draft tokens at a time
  Auto,    // prompt lookup under adaptive control (generation/draft_controller.h)
  Draft,   // a draft model's greedy guesses (generation/model_drafter.h), under adaptive control
  DraftAll,  // a draft model's guesses, max_draft at every step, all verified (measuring a drafter)
  // Prompt lookup's guesses where it has some, else a draft model's, both
  // under adaptive control (generation/lookup_then_model_drafter.h).
  LookupDraft,
};

const char* speculative_mode_name(SpeculativeMode mode);
// Whether the mode runs a draft model (draft_path names it).
bool uses_draft_model(SpeculativeMode mode);
// "off", "lookup", "auto", "draft:PATH", "draft-all:PATH" or
// "lookup+draft:PATH" (then *draft_path = PATH); throws
// Error ("options", "speculative") otherwise.
SpeculativeMode parse_speculative_mode(const std::string& name, std::string* draft_path = nullptr);

struct SpeculativeOptions {
  SpeculativeMode mode = SpeculativeMode::Off;
  int64_t max_draft = 8;  // drafted tokens per verify call, 1..32
  std::string draft_path;  // Draft / DraftAll: the draft model's path ...
  // ... and the model, loaded by the caller before the generation
  // (load/draft_models.h: load_draft_model).
  std::shared_ptr<const Model> draft_model;
};

struct SpeculativeStats {
  int64_t drafted = 0;       // drafted tokens verified
  int64_t accepted = 0;      // of them, accepted
  int64_t verify_calls = 0;  // batched calls of a pending token and its drafts
  int64_t refeeds = 0;       // rollbacks a ring could not make: the kept tokens were run again
  double acceptance() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0; }
};

// Greedy acceptance: `target[i]` is the target's token after the pending
// token and draft[0, i) (target.size() == draft.size() + 1). Returns the
// number a of drafts accepted (the longest prefix with draft[i] ==
// target[i]); target[a] is the token that follows them.
int64_t accepted_prefix(std::span<const int32_t> draft, std::span<const int32_t> target);

// One position of speculative sampling with a one-hot draft (a
// deterministic drafter): p is the target's distribution (ids with
// probabilities summing to 1, as Sampler::distribution gives), `draft` the
// drafted token, u_accept and u_draw two independent uniform draws in
// [0, 1). Accepts the draft with probability p(draft); otherwise returns a
// token drawn from p without the draft, renormalized.
struct SpeculativeChoice {
  bool accepted = false;
  int32_t token = 0;
};
SpeculativeChoice speculative_sample(const std::vector<std::pair<int32_t, double>>& p, int32_t draft,
                                     double u_accept, double u_draw);

// The decode loop's step with speculation (generate() drives it): from the
// pending token, a plain decode step or a verify call, chosen by the mode
// (Lookup: verify whatever the drafter proposes; Auto: as DraftController
// decides), then rollback of what was not accepted.
class SpeculativeDecoder {
 public:
  // The session holds what generate() was given before its prompt
  // (prompt_begin tokens), then the prompt, run as one forward(prompt, Last,
  // max_tokens_per_call): re-feeding after a failed rollback repeats those
  // calls so that every position gets the bits it had (a decode-numerics
  // call for the generated tokens).
  SpeculativeDecoder(Session& session, Sampler& sampler, const SpeculativeOptions& options, int64_t prompt_begin,
                     int64_t prompt_length, int64_t max_tokens_per_call);

  // `context`: every token so far; the session holds all but the last (the
  // pending token). max_draft: drafts this step may verify at most (room
  // left in max_tokens and the context). Appends the tokens now decided (at
  // least one: the target's choice after the pending token and the
  // accepted drafts) to `decided`; the session then holds the context and
  // all of `decided` but its last token.
  void step(std::span<const int32_t> context, int64_t max_draft, std::vector<int32_t>& decided);

  // Right after the prompt's prefill (`context`: every token the session
  // holds): the drafter's own catch-up on it (a draft model's prefill),
  // part of the time to the first token, so that the decode steps' loss
  // ledger prices proposals from the first one on at their steady cost.
  void prepare(std::span<const int32_t> context) { drafter_->prepare(context); }

  // Cuts the session back to its first n tokens, `tokens[0, n)`,
  // re-feeding those when a ring cannot be cut there.
  void truncate(std::span<const int32_t> tokens, int64_t n);

  const SpeculativeStats& stats() const { return stats_; }
  const DraftController& controller() const { return controller_; }
  // Constrained decoding (generation/output_constraint.h): `matcher` is
  // the generation's, positioned after the pending token whenever step()
  // is called. Drafts are cut before their first token the constraint
  // refuses (never verified), and every row is masked before its token is
  // chosen, so the output is what constrained plain decoding gives (greedy:
  // the same tokens). step() leaves the matcher where it found it.
  void constrain(ConstraintMatcher* matcher) { constraint_ = matcher; }

 private:
  // A plain decode step of the pending token: the sampler's choice.
  int32_t decode(std::span<const int32_t> context);
  // `row` (vocab logits) as the sampler sees it: under a constraint, a copy
  // with the tokens it refuses at -inf.
  const float* constrained(const float* row);
  // Runs tokens[0, n) into the reset session as they were run first.
  void refeed(std::span<const int32_t> tokens, int64_t n);
  // The next decided token against the shadow draft (DraftController):
  // when it settles the draft (a mismatch, or its last token matched), its
  // outcome goes to the controller.
  void observe_shadow(int32_t token);

  Session& session_;
  Sampler& sampler_;
  SpeculativeOptions options_;
  int64_t prompt_begin_, prompt_length_, max_tokens_per_call_;
  std::unique_ptr<Drafter> drafter_;
  DraftController controller_;
  SpeculativeStats stats_;
  std::vector<int32_t> draft_, extended_;
  ConstraintMatcher* constraint_ = nullptr;
  std::vector<float> masked_;
  std::vector<int32_t> shadow_;  // auto: a proposal not verified, being checked against the next tokens
  int64_t shadow_matched_ = 0;    // of its tokens, how many the decided ones matched so far
};

}  // namespace tessera

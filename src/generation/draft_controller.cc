#include "generation/draft_controller.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tessera {

DraftController::DraftController(const DraftControlOptions& options) : o_(options) {
  if (o_.max_draft < 1) fail("speculative", "max_draft", "must be at least 1, got {}", o_.max_draft);
  if (!(o_.prior_acceptance > 0 && o_.prior_acceptance < 1))
    fail("speculative", "prior_acceptance", "must be in (0, 1), got {}", o_.prior_acceptance);
  if (!(o_.decay > 0 && o_.decay <= 1)) fail("speculative", "decay", "must be in (0, 1], got {}", o_.decay);
  if (o_.probe_interval < 1 || o_.max_probe_interval < o_.probe_interval || o_.probe_tokens < 1)
    fail("speculative", "probe", "needs 1 <= probe_interval <= max_probe_interval and probe_tokens >= 1");
  if (!(o_.cost_decay > 0 && o_.cost_decay <= 1) || o_.refresh_interval < 2)
    fail("speculative", "cost", "needs cost_decay in (0, 1] and refresh_interval >= 2");
  for (int st = 0; st < 2; ++st) {
    accepted_[st] = 2 * o_.prior_acceptance;
    decided_[st] = 2;
  }
  probe_wait_ = o_.probe_interval;
  if (o_.probe_first) plain_with_proposal_ = probe_wait_ - 1;
}

double DraftController::expected_tokens(int64_t k) const {
  const double a = std::min(acceptance(), 1.0 - 1e-9);
  return (1 - std::pow(a, static_cast<double>(k + 1))) / (1 - a);
}

double DraftController::verify_seconds(int64_t k) const {
  const double prior_m = o_.prior_row_cost * decode_s_;
  if (sw_ <= 0) return decode_s_ + prior_m * static_cast<double>(k);
  const double mk = sk_ / sw_, mt = st_ / sw_;
  const double var = skk_ / sw_ - mk * mk;
  // A slope needs calls of at least two draft lengths (variance of k of a
  // quarter or more); else the prior slope through the calls' mean.
  double m = var >= 0.25 ? (skt_ / sw_ - mk * mt) / var : prior_m;
  m = std::max(m, 0.0);
  return std::max(mt + m * (static_cast<double>(k) - mk), decode_s_);
}

double DraftController::relative_rate(int64_t k) const {
  return expected_tokens(k) * decode_s_ / (verify_seconds(k) + drafting_.of(k));
}

bool DraftController::affordable(int64_t k) const {
  const double allowed = (o_.loss_budget * static_cast<double>(tokens_) + o_.initial_allowance) * decode_s_;
  return lost_s_ + verify_seconds(k) + drafting_.of(k) - decode_s_ <= allowed;
}

int64_t DraftController::draft_length(int64_t available, const DraftingCost& drafting) {
  drafting_ = drafting;
  available = std::min(available, o_.max_draft);
  if (decode_samples_ < 2 || ++since_plain_ >= o_.refresh_interval) return 0;  // time a plain step
  if (costly_probes_ >= o_.max_costly_probes) return 0;  // drafting costs more than it saves
  // The loss budget caps the length (c(k) grows with k): the longest affordable.
  while (available > 0 && !affordable(available)) --available;
  if (available <= 0) return 0;
  int64_t best = 1;
  for (int64_t k = 2; k <= available; ++k)
    if (relative_rate(k) > relative_rate(best)) best = k;
  if (relative_rate(best) > 1 + o_.margin) {
    plain_with_proposal_ = 0;
    return best;
  }
  if (!o_.probes || ++plain_with_proposal_ < probe_wait_) return 0;
  plain_with_proposal_ = 0;
  probing_ = true;
  return std::min(available, o_.probe_tokens);
}

void DraftController::record_decode(double seconds) {
  since_plain_ = 0;
  ++tokens_;
  // The first step of a request runs cold (first use of the decode
  // programs' buffers): not a measure of the next ones.
  if (decode_samples_++ == 0) return;
  const int64_t n = decode_samples_ - 1;
  decode_s_ += (seconds - decode_s_) / static_cast<double>(std::min<int64_t>(n, 8));
}

void DraftController::record_acceptance(int64_t drafted, int64_t accepted) {
  accepted_[state_] = o_.decay * accepted_[state_] + static_cast<double>(accepted);
  decided_[state_] = o_.decay * decided_[state_] + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
  state_ = accepted == drafted ? 1 : 0;
}

void DraftController::record_shadow(int64_t drafted, int64_t accepted) {
  if (drafted > 0) record_acceptance(drafted, accepted);
}

void DraftController::record_verify(int64_t drafted, int64_t accepted, double seconds, double drafting_seconds,
                                    bool cold) {
  record_acceptance(drafted, accepted);
  const double total = seconds + drafting_seconds;
  tokens_ += accepted + 1;
  lost_s_ += total - static_cast<double>(accepted + 1) * decode_s_;
  if (!cold) {
    const double k = static_cast<double>(drafted), d = o_.cost_decay;
    sw_ = d * sw_ + 1;
    sk_ = d * sk_ + k;
    skk_ = d * skk_ + k * k;
    st_ = d * st_ + seconds;
    skt_ = d * skt_ + k * seconds;
  }
  if (probing_) {
    // A failed probe doubles the wait; one that paid halves it (a lone
    // accepted draft in free text should not bring the probes back to
    // their most frequent). Paid: accepted drafts, and its tokens came
    // faster than plain decode's (a drafter whose guesses cost as much as
    // the target's steps, a draft model, is accepted and still loses).
    const bool paid = accepted > 0 && static_cast<double>(accepted + 1) * decode_s_ > (1 + o_.margin) * total;
    probe_wait_ = paid ? std::max(probe_wait_ / 2, o_.probe_interval)
                       : std::min(2 * probe_wait_, o_.max_probe_interval);
    if (!paid && 2 * accepted >= drafted) ++costly_probes_;
    probing_ = false;
  }
}

}  // namespace tessera

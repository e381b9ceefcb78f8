#include "runtime/draft_controller.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tessera {

namespace {

// A running mean of the first samples, then an exponential moving average
// (weight 1/8 on the newest): steady, yet following a change of load.
void running_mean(double& mean, int64_t& samples, double x) {
  ++samples;
  mean += (x - mean) / static_cast<double>(std::min<int64_t>(samples, 8));
}

}  // namespace

DraftController::DraftController(const DraftControlOptions& options) : o_(options) {
  if (o_.max_draft < 1) fail("speculative", "max_draft", "must be at least 1, got {}", o_.max_draft);
  if (!(o_.prior_acceptance > 0 && o_.prior_acceptance < 1))
    fail("speculative", "prior_acceptance", "must be in (0, 1), got {}", o_.prior_acceptance);
  if (!(o_.decay > 0 && o_.decay <= 1)) fail("speculative", "decay", "must be in (0, 1], got {}", o_.decay);
  if (o_.probe_interval < 1 || o_.max_probe_interval < o_.probe_interval || o_.probe_tokens < 1)
    fail("speculative", "probe", "needs 1 <= probe_interval <= max_probe_interval and probe_tokens >= 1");
  accepted_ = 2 * o_.prior_acceptance;
  decided_ = 2;
  probe_wait_ = o_.probe_interval;
}

double DraftController::expected_tokens(int64_t k) const {
  const double a = std::min(acceptance(), 1.0 - 1e-9);
  return (1 - std::pow(a, static_cast<double>(k + 1))) / (1 - a);
}

double DraftController::relative_rate(int64_t k) const {
  const double c1 = decode_s_;
  const double m = row_samples_ > 0 ? std::max(row_s_, 0.0) : o_.prior_row_cost * c1;
  return expected_tokens(k) * c1 / (c1 + m * static_cast<double>(k));
}

int64_t DraftController::draft_length(int64_t available) {
  available = std::min(available, o_.max_draft);
  if (available <= 0 || decode_samples_ == 0) return 0;
  int64_t best = 1;
  for (int64_t k = 2; k <= available; ++k)
    if (relative_rate(k) > relative_rate(best)) best = k;
  if (relative_rate(best) > 1 + o_.margin) {
    plain_with_proposal_ = 0;
    return best;
  }
  if (++plain_with_proposal_ < probe_wait_) return 0;
  plain_with_proposal_ = 0;
  probing_ = true;
  return std::min(available, o_.probe_tokens);
}

void DraftController::record_decode(double seconds) { running_mean(decode_s_, decode_samples_, seconds); }

void DraftController::record_verify(int64_t drafted, int64_t accepted, double seconds) {
  accepted_ = o_.decay * accepted_ + static_cast<double>(accepted);
  decided_ = o_.decay * decided_ + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
  if (decode_samples_ > 0 && drafted > 0)
    running_mean(row_s_, row_samples_, (seconds - decode_s_) / static_cast<double>(drafted));
  if (probing_) {
    probe_wait_ = accepted > 0 ? o_.probe_interval : std::min(2 * probe_wait_, o_.max_probe_interval);
    probing_ = false;
  }
}

}  // namespace tessera

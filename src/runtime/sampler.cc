#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "core/error.h"
#include "kernels/reference/kernels.h"

namespace tessera {

void SamplingParams::validate() const {
  if (!(temperature >= 0) || !std::isfinite(temperature))
    fail("sampling", "temperature", "must be >= 0, got {}", temperature);
  if (top_k < 0) fail("sampling", "top_k", "must be >= 0, got {}", top_k);
  if (!(top_p > 0 && top_p <= 1)) fail("sampling", "top_p", "must be in (0, 1], got {}", top_p);
  if (!(min_p >= 0 && min_p <= 1)) fail("sampling", "min_p", "must be in [0, 1], got {}", min_p);
  if (!(repeat_penalty > 0) || !std::isfinite(repeat_penalty))
    fail("sampling", "repeat_penalty", "must be > 0, got {}", repeat_penalty);
  if (repeat_last_n < -1) fail("sampling", "repeat_last_n", "must be >= -1, got {}", repeat_last_n);
}

Sampler::Sampler(const SamplingParams& params) : p_(params), rng_(params.seed) { p_.validate(); }

bool Sampler::picks_argmax(std::span<const int32_t> context) const {
  return p_.temperature == 0.0f && (p_.repeat_penalty == 1.0f || context.empty());
}

int32_t Sampler::sample(const float* logits, int64_t vocab, std::span<const int32_t> context) {
  const bool penalize = p_.repeat_penalty != 1.0f && !context.empty();
  std::unordered_set<int32_t> seen;
  if (penalize) {
    const size_t n = p_.repeat_last_n < 0 ? context.size()
                                          : std::min(context.size(), static_cast<size_t>(p_.repeat_last_n));
    for (size_t i = context.size() - n; i < context.size(); ++i) seen.insert(context[i]);
  }
  auto penalized = [&](int32_t id) {
    const float l = logits[id];
    if (!penalize || !seen.count(id)) return l;
    return l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
  };

  if (p_.temperature == 0.0f) {
    if (!penalize) return static_cast<int32_t>(ref::argmax(logits, vocab));
    int32_t best = 0;
    float best_l = penalized(0);
    for (int32_t i = 1; i < vocab; ++i)
      if (const float l = penalized(i); l > best_l) best = i, best_l = l;
    return best;
  }

  cand_.resize(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < vocab; ++i) cand_[i] = {penalized(i) / p_.temperature, i};
  auto by_value = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < keep) {
    keep = static_cast<size_t>(p_.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + keep, cand_.end(), by_value);
  } else {
    std::sort(cand_.begin(), cand_.end(), by_value);
  }
  cand_.resize(keep);
  // Softmax over what is left, in double (sorted, so the max is first).
  std::vector<double> prob(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += prob[i] = std::exp(static_cast<double>(cand_[i].first - cand_[0].first));
  for (double& q : prob) q /= sum;
  if (p_.top_p < 1.0f) {
    double mass = 0;
    size_t n = 0;
    while (n < keep) {
      mass += prob[n++];
      if (mass >= p_.top_p) break;
    }
    keep = n;
  }
  if (p_.min_p > 0.0f) {
    const double floor = p_.min_p * prob[0];
    size_t n = 1;
    while (n < keep && prob[n] >= floor) ++n;
    keep = n;
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += prob[i];
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace tessera

#include "generation/sampler.h"

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

namespace {

// The set of tokens the repetition penalty applies to: the last
// repeat_last_n of the context (all of it for -1), each once.
std::unordered_set<int32_t> penalized_tokens(const SamplingParams& p, std::span<const int32_t> context) {
  std::unordered_set<int32_t> seen;
  if (p.repeat_penalty == 1.0f || context.empty()) return seen;
  const size_t n =
      p.repeat_last_n < 0 ? context.size() : std::min(context.size(), static_cast<size_t>(p.repeat_last_n));
  for (size_t i = context.size() - n; i < context.size(); ++i) seen.insert(context[i]);
  return seen;
}

float penalize(const SamplingParams& p, const std::unordered_set<int32_t>& seen, float l, int32_t id) {
  if (seen.empty() || !seen.count(id)) return l;
  return l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
}

}  // namespace

int32_t Sampler::argmax(const float* logits, int64_t vocab, std::span<const int32_t> context) const {
  const std::unordered_set<int32_t> seen = penalized_tokens(p_, context);
  if (seen.empty()) return static_cast<int32_t>(ref::argmax(logits, vocab));
  int32_t best = 0;
  float best_l = penalize(p_, seen, logits[0], 0);
  for (int32_t i = 1; i < vocab; ++i)
    if (const float l = penalize(p_, seen, logits[i], i); l > best_l) best = i, best_l = l;
  return best;
}

size_t Sampler::filter(const float* logits, int64_t vocab, std::span<const int32_t> context) {
  const std::unordered_set<int32_t> seen = penalized_tokens(p_, context);
  cand_.resize(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < vocab; ++i) cand_[i] = {penalize(p_, seen, logits[i], i) / p_.temperature, i};
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
  prob_.assign(keep, 0.0);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += prob_[i] = std::exp(static_cast<double>(cand_[i].first - cand_[0].first));
  for (double& q : prob_) q /= sum;
  if (p_.top_p < 1.0f) {
    double mass = 0;
    size_t n = 0;
    while (n < keep) {
      mass += prob_[n++];
      if (mass >= p_.top_p) break;
    }
    keep = n;
  }
  if (p_.min_p > 0.0f) {
    const double floor = p_.min_p * prob_[0];
    size_t n = 1;
    while (n < keep && prob_[n] >= floor) ++n;
    keep = n;
  }
  return keep;
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::sample(const float* logits, int64_t vocab, std::span<const int32_t> context) {
  if (p_.temperature == 0.0f) return argmax(logits, vocab, context);
  const size_t keep = filter(logits, vocab, context);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += prob_[i];
  const double u = uniform() * total;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob_[i];
    if (u < acc) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

const std::vector<std::pair<int32_t, double>>& Sampler::distribution(const float* logits, int64_t vocab,
                                                                     std::span<const int32_t> context) {
  dist_.clear();
  if (p_.temperature == 0.0f) {
    dist_.emplace_back(argmax(logits, vocab, context), 1.0);
    return dist_;
  }
  const size_t keep = filter(logits, vocab, context);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += prob_[i];
  for (size_t i = 0; i < keep; ++i) dist_.emplace_back(cand_[i].second, prob_[i] / total);
  return dist_;
}

}  // namespace tessera

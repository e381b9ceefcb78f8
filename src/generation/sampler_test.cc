#include "generation/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

std::vector<float> random_logits(std::mt19937& rng, int64_t n, float stddev = 2.0f) {
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

int64_t naive_argmax(const std::vector<float>& l) {
  int64_t best = 0;
  for (size_t i = 1; i < l.size(); ++i)
    if (l[i] > l[best]) best = static_cast<int64_t>(i);
  return best;
}

std::vector<double> softmax(const std::vector<float>& l, double temperature = 1.0) {
  double mx = -1e300;
  for (float x : l) mx = std::max(mx, static_cast<double>(x) / temperature);
  std::vector<double> p(l.size());
  double sum = 0;
  for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp(l[i] / temperature - mx);
  for (double& x : p) x /= sum;
  return p;
}

std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, int draws,
                                std::span<const int32_t> context = {}) {
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    const int32_t t = s.sample(logits.data(), static_cast<int64_t>(logits.size()), context);
    EXPECT_GE(t, 0);
    EXPECT_LT(t, static_cast<int32_t>(logits.size()));
    if (t >= 0 && t < static_cast<int32_t>(logits.size())) f[t] += 1;
  }
  for (double& x : f) x /= draws;
  return f;
}

void expect_freqs(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "token " << i;
}

TEST(Sampler, TemperatureZeroIsArgmax) {
  std::mt19937 rng(1);
  SamplingParams p;  // temperature 0
  Sampler s(p);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 100);
    std::vector<float> l = random_logits(rng, n);
    if (trial % 3 == 0 && n > 2) {  // ties: the lowest id wins
      const float mx = *std::max_element(l.begin(), l.end());
      l[rng() % n] = mx;
      l[rng() % n] = mx;
    }
    EXPECT_EQ(s.sample(l.data(), n, {}), naive_argmax(l)) << "trial " << trial;
  }
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferent) {
  std::mt19937 rng(2);
  const std::vector<float> logits = random_logits(rng, 50, 0.5f);
  auto run = [&](uint64_t seed) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(logits.data(), 50, {}));
    return out;
  };
  const std::vector<int32_t> a = run(1234), b = run(1234), c = run(1235);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // The sequence is not constant (the draw actually uses the generator).
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 5u);
}

TEST(Sampler, TopKOneIsArgmaxAtAnyTemperature) {
  std::mt19937 rng(3);
  for (float temp : {0.5f, 1.0f, 5.0f, 100.0f}) {
    SamplingParams p;
    p.temperature = temp;
    p.top_k = 1;
    p.seed = 7;
    Sampler s(p);
    for (int trial = 0; trial < 100; ++trial) {
      const std::vector<float> l = random_logits(rng, 30, 0.3f);
      ASSERT_EQ(s.sample(l.data(), 30, {}), naive_argmax(l)) << "temperature " << temp << " trial " << trial;
    }
  }
}

TEST(Sampler, TopKRestrictsToLargest) {
  const std::vector<float> l = {0.1f, 2.0f, -1.0f, 1.5f, 0.3f, 1.9f};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 3;
  p.seed = 11;
  Sampler s(p);
  const std::vector<double> f = frequencies(s, l, 20000);
  // Renormalised softmax over {1, 5, 3}.
  std::vector<float> kept = {l[1], l[5], l[3]};
  const std::vector<double> pk = softmax(kept);
  std::vector<double> want(l.size(), 0.0);
  want[1] = pk[0];
  want[5] = pk[1];
  want[3] = pk[2];
  expect_freqs(f, want, 0.02);
}

TEST(Sampler, TinyTopPIsArgmax) {
  std::mt19937 rng(4);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 1e-6f;
  p.seed = 5;
  Sampler s(p);
  for (int trial = 0; trial < 100; ++trial) {
    const std::vector<float> l = random_logits(rng, 40, 0.2f);
    ASSERT_EQ(s.sample(l.data(), 40, {}), naive_argmax(l)) << trial;
  }
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingMass) {
  const std::vector<float> l = {-1.0f, 2.0f, 0.0f, 1.0f};
  const std::vector<double> sm = softmax(l);  // order by probability: 1, 3, 2, 0
  const double top_p = (sm[1] + sm[3] + sm[1]) / 2.0;  // strictly between p1 and p1 + p3
  ASSERT_GT(top_p, sm[1]);
  ASSERT_LT(top_p, sm[1] + sm[3]);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = static_cast<float>(top_p);
  p.seed = 9;
  Sampler s(p);
  const std::vector<double> f = frequencies(s, l, 20000);
  std::vector<double> want(4, 0.0);
  want[1] = sm[1] / (sm[1] + sm[3]);
  want[3] = sm[3] / (sm[1] + sm[3]);
  expect_freqs(f, want, 0.02);
}

TEST(Sampler, MinPOneIsArgmax) {
  std::mt19937 rng(6);
  SamplingParams p;
  p.temperature = 2.0f;
  p.min_p = 1.0f;
  p.seed = 3;
  Sampler s(p);
  for (int trial = 0; trial < 100; ++trial) {
    const std::vector<float> l = random_logits(rng, 25, 0.2f);
    ASSERT_EQ(s.sample(l.data(), 25, {}), naive_argmax(l)) << trial;
  }
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  const std::vector<float> l = {2.0f, 1.0f, 0.0f, -1.0f};
  const std::vector<double> sm = softmax(l);
  // Floor between p2 and p1 (relative to p0): keeps tokens 0 and 1 only.
  const double min_p = (sm[1] / sm[0] + sm[2] / sm[0]) / 2.0;
  SamplingParams p;
  p.temperature = 1.0f;
  p.min_p = static_cast<float>(min_p);
  p.seed = 21;
  Sampler s(p);
  const std::vector<double> f = frequencies(s, l, 20000);
  std::vector<double> want(4, 0.0);
  want[0] = sm[0] / (sm[0] + sm[1]);
  want[1] = sm[1] / (sm[0] + sm[1]);
  expect_freqs(f, want, 0.02);
}

TEST(Sampler, RepetitionPenaltyGreedy) {
  const std::vector<float> l = {1.0f, 3.0f, 2.5f, -1.0f};
  const std::vector<int32_t> ctx = {1};
  {
    SamplingParams p;
    p.repeat_penalty = 1.5f;  // 3 / 1.5 = 2 < 2.5
    Sampler s(p);
    EXPECT_EQ(s.sample(l.data(), 4, ctx), 2);
    EXPECT_EQ(s.sample(l.data(), 4, {}), 1);  // no context: nothing penalised
  }
  {
    SamplingParams p;
    p.repeat_penalty = 1.1f;  // 3 / 1.1 ≈ 2.73 > 2.5: still the best
    Sampler s(p);
    EXPECT_EQ(s.sample(l.data(), 4, ctx), 1);
  }
  {
    // Negative logits are multiplied (made more negative), not divided.
    const std::vector<float> neg = {-1.0f, -1.2f, -5.0f};
    const std::vector<int32_t> c0 = {0};
    SamplingParams p;
    p.repeat_penalty = 1.5f;  // -1 · 1.5 = -1.5 < -1.2
    Sampler s(p);
    EXPECT_EQ(s.sample(neg.data(), 3, c0), 1);
  }
  {
    // Only the last repeat_last_n tokens count.
    const std::vector<int32_t> old = {1, 3, 3};
    SamplingParams p;
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = 2;
    Sampler s(p);
    EXPECT_EQ(s.sample(l.data(), 4, old), 1);
    p.repeat_last_n = 3;
    Sampler s3(p);
    EXPECT_EQ(s3.sample(l.data(), 4, old), 2);
    p.repeat_last_n = -1;  // whole context
    Sampler sall(p);
    EXPECT_EQ(sall.sample(l.data(), 4, old), 2);
    p.repeat_last_n = 0;  // none
    Sampler snone(p);
    EXPECT_EQ(snone.sample(l.data(), 4, old), 1);
  }
}

TEST(Sampler, RepetitionPenaltyLowersProbability) {
  const std::vector<float> l = {1.0f, 1.0f, 0.5f};
  const std::vector<int32_t> ctx = {0, 0, 0};  // counted once, however often it occurs
  SamplingParams p;
  p.temperature = 1.0f;
  p.repeat_penalty = 2.0f;
  p.seed = 17;
  Sampler s(p);
  const std::vector<double> f = frequencies(s, l, 20000, ctx);
  const std::vector<double> want = softmax({0.5f, 1.0f, 0.5f});
  expect_freqs(f, want, 0.02);
  EXPECT_LT(f[0], f[1] - 0.1);
}

TEST(Sampler, FrequenciesMatchSoftmax) {
  std::mt19937 rng(8);
  const std::vector<float> l = random_logits(rng, 8, 1.0f);
  for (float temp : {1.0f, 2.0f, 0.5f}) {
    SamplingParams p;
    p.temperature = temp;
    p.seed = 99;
    Sampler s(p);
    const std::vector<double> f = frequencies(s, l, 20000);
    SCOPED_TRACE(testing::Message() << "temperature " << temp);
    expect_freqs(f, softmax(l, temp), 0.02);
  }
}

TEST(Sampler, ValidateRejectsOutOfRange) {
  auto bad = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    return p;
  };
  const SamplingParams cases[] = {
      bad([](SamplingParams& p) { p.temperature = -1.0f; }),
      bad([](SamplingParams& p) { p.temperature = std::nanf(""); }),
      bad([](SamplingParams& p) { p.top_p = 0.0f; }),
      bad([](SamplingParams& p) { p.top_p = 1.5f; }),
      bad([](SamplingParams& p) { p.min_p = 2.0f; }),
      bad([](SamplingParams& p) { p.min_p = -0.1f; }),
      bad([](SamplingParams& p) { p.repeat_penalty = 0.0f; }),
      bad([](SamplingParams& p) { p.repeat_penalty = -1.0f; }),
      bad([](SamplingParams& p) { p.top_k = -1; }),
  };
  int i = 0;
  for (const SamplingParams& p : cases) {
    EXPECT_THROW(p.validate(), Error) << "case " << i;
    EXPECT_THROW(Sampler{p}, Error) << "case " << i;
    ++i;
  }
  SamplingParams ok;
  EXPECT_NO_THROW(ok.validate());
  ok.temperature = 0.7f;
  ok.top_k = 40;
  ok.top_p = 1.0f;
  ok.min_p = 1.0f;
  ok.repeat_penalty = 1.1f;
  ok.repeat_last_n = -1;
  EXPECT_NO_THROW(ok.validate());
}

}  // namespace
}  // namespace tessera

#include "runtime/rope_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/model_spec.h"

namespace tessera {
namespace {

void expect_rel(double got, double want, double rtol, const char* what, int64_t i) {
  EXPECT_LE(std::abs(got - want), rtol * std::abs(want)) << what << "[" << i << "]: got " << got << " want " << want;
}

RopeSpec spec_with(double theta, const std::string& type, double factor) {
  RopeSpec s;
  s.theta = theta;
  s.scaling.type = type;
  s.scaling.factor = factor;
  return s;
}

TEST(RopeTable, DefaultInverseFrequencies) {
  for (double theta : {10000.0, 500000.0, 1000000.0})
    for (int64_t d : {2, 8, 64, 128, 256}) {
      RopeTable t(spec_with(theta, "default", 1.0), d, 4096);
      ASSERT_EQ(t.half(), d / 2);
      EXPECT_EQ(t.attention_factor(), 1.0f);
      for (int64_t i = 0; i < d / 2; ++i)
        expect_rel(t.inv_freq()[i], 1.0 / std::pow(theta, 2.0 * i / d), 1e-6, "inv_freq", i);
    }
  // A rot_dim that is not a power of two: the f32 exponent 2i/d is rounded, so a
  // little more slack.
  RopeTable t(spec_with(10000.0, "default", 1.0), 96, 4096);
  for (int64_t i = 0; i < 48; ++i) expect_rel(t.inv_freq()[i], 1.0 / std::pow(10000.0, 2.0 * i / 96), 2e-6, "d96", i);
}

TEST(RopeTable, CosSinOfF32AngleAndUnitNorm) {
  RopeTable t(spec_with(10000.0, "default", 1.0), 64, 4096);
  const int64_t h = t.half(), start = 0, rows = 300;
  std::vector<float> c(rows * h), s(rows * h);
  t.fill(start, rows, c.data(), s.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < h; ++i) {
      const float angle = static_cast<float>(start + r) * t.inv_freq()[i];  // f32, as documented
      EXPECT_NEAR(c[r * h + i], std::cos(static_cast<double>(angle)), 1e-6) << r << "," << i;
      EXPECT_NEAR(s[r * h + i], std::sin(static_cast<double>(angle)), 1e-6) << r << "," << i;
      const double n = static_cast<double>(c[r * h + i]) * c[r * h + i] + static_cast<double>(s[r * h + i]) * s[r * h + i];
      EXPECT_NEAR(n, 1.0, 1e-6);
    }
  // Position 0: no rotation.
  for (int64_t i = 0; i < h; ++i) {
    EXPECT_EQ(c[i], 1.0f);
    EXPECT_EQ(s[i], 0.0f);
  }
}

TEST(RopeTable, FillOfManyRowsEqualsRowByRow) {
  std::mt19937 rng(1);
  RopeSpec spec = spec_with(500000.0, "llama3", 8.0);
  spec.scaling.original_max_position_embeddings = 8192;
  for (const RopeSpec& sp : {spec_with(10000.0, "default", 1.0), spec}) {
    RopeTable t(sp, 64, 131072);
    const int64_t h = t.half();
    for (int trial = 0; trial < 5; ++trial) {
      const int64_t start = static_cast<int64_t>(rng() % 100000), rows = 1 + static_cast<int64_t>(rng() % 40);
      std::vector<float> c(rows * h), s(rows * h);
      t.fill(start, rows, c.data(), s.data());
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> c1(h), s1(h);
        t.fill(start + r, 1, c1.data(), s1.data());
        ASSERT_EQ(std::memcmp(c1.data(), &c[r * h], sizeof(float) * h), 0) << "start " << start << " row " << r;
        ASSERT_EQ(std::memcmp(s1.data(), &s[r * h], sizeof(float) * h), 0) << "start " << start << " row " << r;
      }
    }
  }
}

TEST(RopeTable, LinearScalingDividesByFactor) {
  const RopeTable base(spec_with(10000.0, "default", 1.0), 128, 4096);
  for (double factor : {2.0, 4.0, 8.0}) {
    const RopeTable lin(spec_with(10000.0, "linear", factor), 128, 4096);
    ASSERT_EQ(lin.half(), base.half());
    EXPECT_EQ(lin.attention_factor(), 1.0f);
    for (int64_t i = 0; i < lin.half(); ++i)
      expect_rel(lin.inv_freq()[i], static_cast<double>(base.inv_freq()[i]) / factor, 1e-6, "linear", i);
  }
}

TEST(RopeTable, Llama3Scaling) {
  const double theta = 500000.0, factor = 8.0, low = 1.0, high = 4.0, old_ctx = 8192.0;
  const int64_t d = 64;
  RopeSpec spec = spec_with(theta, "llama3", factor);
  spec.scaling.low_freq_factor = low;
  spec.scaling.high_freq_factor = high;
  spec.scaling.original_max_position_embeddings = static_cast<int64_t>(old_ctx);
  const RopeTable t(spec, d, 131072);
  const RopeTable base(spec_with(theta, "default", 1.0), d, 131072);
  ASSERT_EQ(t.half(), d / 2);
  EXPECT_EQ(t.attention_factor(), 1.0f);
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  int n_high = 0, n_low = 0, n_medium = 0;
  for (int64_t i = 0; i < d / 2; ++i) {
    const double f = 1.0 / std::pow(theta, 2.0 * i / d);
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_wavelen) {
      ++n_high;
      EXPECT_EQ(t.inv_freq()[i], base.inv_freq()[i]) << "high-frequency entry " << i << " must be unchanged";
    } else if (wavelen > low_wavelen) {
      ++n_low;
      expect_rel(t.inv_freq()[i], f / factor, 1e-5, "low-frequency", i);
    } else {
      ++n_medium;
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      const double want = (1.0 - smooth) * f / factor + smooth * f;
      expect_rel(t.inv_freq()[i], want, 1e-5, "medium-frequency", i);
      EXPECT_LT(t.inv_freq()[i], base.inv_freq()[i]);
      EXPECT_GT(t.inv_freq()[i], base.inv_freq()[i] / static_cast<float>(factor));
    }
  }
  // The case covers every regime.
  EXPECT_GT(n_high, 0);
  EXPECT_GT(n_low, 0);
  EXPECT_GT(n_medium, 0);
}

// transformers' _compute_yarn_parameters, in double.
std::vector<double> naive_yarn(double theta, int64_t d, double factor, double max_pos, double beta_fast,
                               double beta_slow) {
  auto correction_dim = [&](double rotations) {
    return (d * std::log(max_pos / (rotations * 2 * std::numbers::pi))) / (2 * std::log(theta));
  };
  double lo = std::max(0.0, std::floor(correction_dim(beta_fast)));
  double hi = std::min(static_cast<double>(d - 1), std::ceil(correction_dim(beta_slow)));
  if (lo == hi) hi += 0.001;
  std::vector<double> out(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) {
    const double pos_freq = std::pow(theta, 2.0 * i / d);
    const double extrap = 1.0 / pos_freq, interp = 1.0 / (factor * pos_freq);
    const double ramp = std::clamp((i - lo) / (hi - lo), 0.0, 1.0);
    const double extrap_factor = 1.0 - ramp;
    out[i] = interp * (1.0 - extrap_factor) + extrap * extrap_factor;
  }
  return out;
}

TEST(RopeTable, YarnFrequenciesAndAttentionFactor) {
  const double theta = 10000.0, factor = 4.0;
  const int64_t d = 128;
  RopeSpec spec = spec_with(theta, "yarn", factor);
  spec.scaling.original_max_position_embeddings = 4096;
  const RopeTable t(spec, d, 16384);
  const std::vector<double> want = naive_yarn(theta, d, factor, 4096, 32.0, 1.0);
  for (int64_t i = 0; i < d / 2; ++i) expect_rel(t.inv_freq()[i], want[i], 1e-5, "yarn", i);
  // Highest frequency kept, lowest interpolated.
  expect_rel(t.inv_freq()[0], 1.0, 1e-6, "yarn first", 0);
  expect_rel(t.inv_freq()[d / 2 - 1], 1.0 / (factor * std::pow(theta, (d - 2.0) / d)), 1e-5, "yarn last", d / 2 - 1);

  // attention_factor = 0.1 ln(factor) + 1 when not given ...
  EXPECT_NEAR(t.attention_factor(), 0.1 * std::log(factor) + 1.0, 1e-6);
  // ... and cos/sin carry it.
  const int64_t h = t.half();
  std::vector<float> c(3 * h), s(3 * h);
  t.fill(10, 3, c.data(), s.data());
  const double af = t.attention_factor();
  for (int64_t k = 0; k < 3 * h; ++k)
    EXPECT_NEAR(static_cast<double>(c[k]) * c[k] + static_cast<double>(s[k]) * s[k], af * af, 1e-5) << k;

  // Given explicitly: used as is.
  spec.scaling.attention_factor = 1.25;
  EXPECT_NEAR(RopeTable(spec, d, 16384).attention_factor(), 1.25, 1e-7);
  // No scaling (factor 1): 1.
  RopeSpec one = spec_with(theta, "yarn", 1.0);
  one.scaling.original_max_position_embeddings = 4096;
  EXPECT_NEAR(RopeTable(one, d, 4096).attention_factor(), 1.0, 1e-7);
}

TEST(RopeTable, YarnFallsBackToContextLength) {
  RopeSpec with_orig = spec_with(1000000.0, "yarn", 8.0);
  with_orig.scaling.original_max_position_embeddings = 32768;
  RopeSpec without = spec_with(1000000.0, "yarn", 8.0);  // original_max_position_embeddings = 0
  const RopeTable a(with_orig, 64, 262144), b(without, 64, 32768);
  EXPECT_EQ(a.inv_freq(), b.inv_freq());
  const std::vector<double> want = naive_yarn(1000000.0, 64, 8.0, 32768, 32.0, 1.0);
  for (int64_t i = 0; i < 32; ++i) expect_rel(b.inv_freq()[i], want[i], 1e-5, "yarn fallback", i);
}

TEST(RopeTable, PartialRotaryHalf) {
  const RopeTable t(spec_with(10000.0, "default", 1.0), 32, 4096);  // e.g. head_dim 128 × 0.25
  ASSERT_EQ(t.half(), 16);
  for (int64_t i = 0; i < 16; ++i) expect_rel(t.inv_freq()[i], 1.0 / std::pow(10000.0, 2.0 * i / 32), 1e-6, "partial", i);
}

TEST(RopeTable, UnsupportedTypeThrows) {
  EXPECT_THROW(RopeTable(spec_with(10000.0, "foo", 2.0), 64, 4096), Error);
}

}  // namespace
}  // namespace tessera

#include "kernels/refine_scan.h"

#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace tessera::kernels {
namespace {

// Rows of outputs and scales around a spread of magnitudes, with the values
// the scans must treat as the scalar twin does planted here and there: NaN,
// ±inf, ±0, subnormals, exact ties with the running maximum.
void random_row(std::mt19937& rng, int64_t n, std::vector<float>& y, std::vector<float>& s, std::vector<float>& norm) {
  std::normal_distribution<float> logit(0.0f, 4.0f);
  std::uniform_real_distribution<float> scale(1e-4f, 3e-2f), u(0.0f, 1.0f);
  y.resize(static_cast<size_t>(n));
  s.resize(static_cast<size_t>(n));
  norm.resize(static_cast<size_t>(n));
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-40f};
  for (int64_t m = 0; m < n; ++m) {
    y[m] = logit(rng);
    s[m] = (u(rng) < 0.5f ? -1.0f : 1.0f) * scale(rng);
    if (u(rng) < 0.01f) y[m] = specials[rng() % 6];
    if (u(rng) < 0.01f) s[m] = specials[3 + rng() % 3];
    // ‖w‖₂ between 2 and 12 times max |w| = 127·|s|: either bound can be the smaller.
    norm[m] = 127.0f * std::fabs(s[m]) * (2.0f + 10.0f * u(rng));
    if (m > 0 && u(rng) < 0.02f) {  // exact ties
      y[m] = y[m - 1];
      s[m] = s[m - 1];
      norm[m] = norm[m - 1];
    }
  }
}

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(RefineScan, VectorLevelsGiveTheScalarTwinsBoundsAndBlocks) {
  std::mt19937 rng(1811);
  int pruned = 0, most = 0;  // trials keeping under / over half the blocks
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    for (int trial = 0; trial < 400; ++trial) {
      // Lengths around the vector widths and their tails, and a head's size.
      const int64_t n = trial == 0 ? 49152 : 1 + static_cast<int64_t>(rng() % 300);
      std::vector<float> y, s, norm;
      random_row(rng, n, y, s, norm);
      if (trial % 7 == 0) std::fill(y.begin(), y.end(), std::numeric_limits<float>::quiet_NaN());
      // 1-norms about 20x the 2-norms (576 columns), and the f32 margin.
      const double q1 = 0.01 + (rng() % 100) * 1e-3, q2 = q1 * 1e-2 * (rng() % 3);
      RefineMargins g{q1 * (10 + rng() % 20), q2 * (10 + rng() % 20), q1, q2, 1e-5 * (rng() % 4)};
      const RefineBounds want = refine_bounds_scalar(y.data(), s.data(), norm.data(), n, g);
      const RefineBounds got = refine_bounds(isa, y.data(), s.data(), norm.data(), n, g);
      ASSERT_TRUE(same_value(got.best_lower, want.best_lower)) << isa_name(isa) << " n " << n;
      ASSERT_TRUE(same_value(got.b2_max, want.b2_max)) << isa_name(isa) << " n " << n;
      if (!std::isfinite(want.best_lower)) continue;
      // Margins as given (few candidates) and ten times wider (many).
      for (double widen : {1.0, 10.0}) {
        const RefineMargins gw{g.e1 * widen, g.e2 * widen, g.q1 * widen, g.q2 * widen, g.rho};
        const RefineBounds bw = refine_bounds_scalar(y.data(), s.data(), norm.data(), n, gw);
        std::vector<int64_t> want_blocks = {-1}, got_blocks = {-1};  // appended to, not cleared
        refine_candidates_scalar(y.data(), s.data(), norm.data(), n, gw, bw, want_blocks);
        refine_candidates(isa, y.data(), s.data(), norm.data(), n, gw, bw, got_blocks);
        ASSERT_EQ(got_blocks, want_blocks) << isa_name(isa) << " n " << n;
        (static_cast<int64_t>(want_blocks.size() - 1) * 2 < (n + 3) / 4 ? pruned : most) += 1;
      }
    }
  }
  if (isa_supported(Isa::Avx2)) {
    EXPECT_GT(pruned, 50);
    EXPECT_GT(most, 50);
  }
}

// The twin itself, on a row small enough to check by hand.
TEST(RefineScan, ScalarTwinFollowsTheDefinition) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y = {1.0f, 3.0f, nan, 2.0f, -5.0f, 2.5f};
  const std::vector<float> s = {0.01f, -0.01f, 0.02f, 0.0f, 0.03f, 0.001f};
  // Row 1's 2-norm bound is the smaller one (1.0 · 0.5 < 1.27 · 1), row 5's
  // the 1-norm one (0.127 · 1 < 100 · 0.5).
  const std::vector<float> norm = {2.0f, 1.0f, 1.0f, 0.0f, 10.0f, 100.0f};
  const RefineMargins g{1.0, 0.0, 0.5, 0.0, 0.0};
  const RefineBounds r = refine_bounds_scalar(y.data(), s.data(), norm.data(), 6, g);
  // y − B1: 1 − min(1.27, 1), 3 − min(1.27, 0.5), NaN (skipped), 2 − 0, −5 − 3.81, 2.5 − 0.127.
  EXPECT_EQ(r.best_lower, 3.0 - 0.5);
  EXPECT_EQ(r.b2_max, 0.0);
  std::vector<int64_t> blocks;
  // y + B1 + B2 + b2_max ≥ 2.5: row 1 (3.5) and row 5 (2.627); row 3 (2) not.
  refine_candidates_scalar(y.data(), s.data(), norm.data(), 6, g, r, blocks);
  EXPECT_EQ(blocks, std::vector<int64_t>({0, 1}));
  blocks.clear();
  const RefineBounds high{2.7, 0.0};
  refine_candidates_scalar(y.data(), s.data(), norm.data(), 6, g, high, blocks);
  EXPECT_EQ(blocks, std::vector<int64_t>({0}));
}

}  // namespace
}  // namespace tessera::kernels

#include "kernels/qlinear_refine.h"

#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "kernels/qlinear_test_util.h"

namespace tessera::kernels {
namespace {

using namespace test_fixtures;

int64_t argmax(const float* y, int64_t n) { return std::max_element(y, y + n) - y; }

// Heads with near-ties planted among spread-out logits: after refinement
// every row's argmax is the two-pass argmax (which one pass often misses
// here), every output holds either its one-pass or its two-pass bits (the
// two-pass ones for whatever was recomputed), and most outputs are pruned.
TEST(QLinearRefine, ArgmaxIsTheTwoPassArgmax) {
  std::mt19937 rng(4242);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
    if (!isa_supported(isa)) continue;
    int one_pass_misses = 0;
    for (const auto& [f, group, block] : {std::tuple{WeightFormat::Int8, 16, 0}, std::tuple{WeightFormat::Lut4, 16, 0},
                                          std::tuple{WeightFormat::Blk4, 32, kBlockOffsets},
                                          std::tuple{WeightFormat::Blk8, 16, kBlockF32}}) {
      for (int trial = 0; trial < 40; ++trial) {
        const int64_t n = 512, cols = 192, rows = 3;
        RandomCase c(rng, {f, n, cols, group, rows, block});
        // Spread the logits, then tie the best two of row 0 within 1e-3.
        std::normal_distribution<float> spread(0.0f, 30.0f);
        for (float& b : c.bias) b = spread(rng);
        Int8Activations two;
        quantize_activations(Isa::Scalar, c.x.data(), rows, cols, c.w.layout(), 2, two);
        std::vector<float> y2(rows * n);
        qlinear(isa, c.w, two, c.bias.data(), 0, n, y2.data(), n);
        const int64_t a = argmax(y2.data(), n);
        int64_t b = a == 0 ? 1 : 0;
        for (int64_t m = 0; m < n; ++m)
          if (m != a && y2[m] > y2[b]) b = m;
        c.bias[b] += y2[a] - y2[b] + std::uniform_real_distribution<float>(-1e-3f, 1e-3f)(rng);
        qlinear(isa, c.w, two, c.bias.data(), 0, n, y2.data(), n);

        Int8Activations one;
        quantize_activations(Isa::Scalar, c.x.data(), rows, cols, c.w.layout(), 1, one);
        std::vector<float> y1(rows * n);
        qlinear(isa, c.w, one, c.bias.data(), 0, n, y1.data(), n);
        std::vector<float> refined = y1;
        RefineScratch scratch;
        const RefineHead head = make_refine_head(c.w);
        const int64_t redone =
            refine_top_outputs(isa, c.w, head, c.x.data(), rows, c.bias.data(), refined.data(), n, scratch);
        EXPECT_LT(redone, rows * n / 4) << "pruning too weak";
        for (int64_t t = 0; t < rows; ++t) {
          const float* r = refined.data() + t * n;
          ASSERT_EQ(argmax(r, n), argmax(y2.data() + t * n, n)) << isa_name(isa) << " trial " << trial << " row " << t;
          one_pass_misses += argmax(y1.data() + t * n, n) != argmax(y2.data() + t * n, n);
          for (int64_t m = 0; m < n; ++m) {
            const float v = r[m];
            ASSERT_TRUE(same_bits({v}, {y1[t * n + m]}) || same_bits({v}, {y2[t * n + m]})) << "output " << m;
          }
        }
        // The argmax itself was recomputed: its bits are the two-pass bits.
        const int64_t top = argmax(refined.data(), n);
        EXPECT_TRUE(same_bits({refined[top]}, {y2[top]}));
      }
    }
    // The planted ties do fool one pass: the test can tell refinement from none.
    EXPECT_GT(one_pass_misses, 0) << isa_name(isa);
  }
}

// N_n is |out_scale| times the 2-norm of the row's int8 values, never below
// the norm of the weights the kernels multiply (computed here in long double
// from value()), and within float rounding of it; on every format. max_scale
// is the largest |out_scale|.
TEST(QLinearRefine, RowNormsBoundTheRowsFromAbove) {
  std::mt19937 rng(77);
  for (WeightFormat f : {WeightFormat::Int8, WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2}) {
    RandomCase c(rng, {f, 96, 192, 16, 1});
    const RefineHead head = make_refine_head(c.w);
    const std::vector<float>& norms = head.norms;
    ASSERT_EQ(static_cast<int64_t>(norms.size()), c.w.rows());
    double max_scale = 0;
    for (int64_t r = 0; r < c.w.rows(); ++r) max_scale = std::max<double>(max_scale, std::fabs(c.w.out_scale(r)));
    EXPECT_EQ(head.max_scale, max_scale);
    for (int64_t r = 0; r < c.w.rows(); ++r) {
      long double sq = 0;
      for (int64_t col = 0; col < c.w.cols(); ++col) {
        const long double v = static_cast<long double>(c.w.value(r, col)) * c.w.out_scale(r);
        sq += v * v;
      }
      const long double want = std::sqrt(sq);
      EXPECT_GE(static_cast<long double>(norms[r]), want) << weight_format_name(f) << " row " << r;
      EXPECT_LE(static_cast<long double>(norms[r]), want * (1 + 1e-6L)) << weight_format_name(f) << " row " << r;
    }
  }
}

// Blocked rows (w = s_b · code + o_b): N_n bounds the exact 2-norm of those
// values from above within float rounding, and 127 · S_n bounds every |w|.
TEST(QLinearRefine, BlockedRowNormsAndScalesBoundTheRows) {
  std::mt19937 rng(78);
  for (const LinearShape& s : {LinearShape{WeightFormat::Blk4, 40, 192, 32, 1, kBlockOffsets},
                               LinearShape{WeightFormat::Blk8, 40, 192, 16, 1, kBlockF32 | kBlockOffsets},
                               LinearShape{WeightFormat::Blk8, 40, 192, 32, 1, 0}}) {
    RandomCase c(rng, s);
    const RefineHead head = make_refine_head(c.w);
    double max_scale = 0;
    for (int64_t r = 0; r < c.w.rows(); ++r) {
      long double sq = 0, biggest = 0;
      for (int64_t col = 0; col < c.w.cols(); ++col) {
        const int64_t b = col / c.w.block_cols();
        const long double v = static_cast<long double>(c.w.block_scale(r, b)) * c.w.value(r, col) +
                              (c.w.block_offsets() ? c.w.block_offset(r, b) : 0.0f);
        sq += v * v;
        biggest = std::max(biggest, std::fabs(v));
      }
      const long double want = std::sqrt(sq);
      EXPECT_GE(static_cast<long double>(head.norms[r]), want) << weight_format_name(s.format) << " row " << r;
      EXPECT_LE(static_cast<long double>(head.norms[r]), want * (1 + 1e-6L)) << weight_format_name(s.format);
      EXPECT_GE(127.0L * head.scales[r], biggest) << weight_format_name(s.format) << " row " << r;
      max_scale = std::max<double>(max_scale, head.scales[r]);
    }
    EXPECT_EQ(head.max_scale, max_scale);
  }
}

// The scans run over output ranges in any split and order (the head's
// parallel pass, each range's slot taken as it comes) and the recomputation
// in any split: the planned blocks and the refined bits are those of one
// range on one thread. The logits are spread about as wide as the band the
// bound keeps, so that a good part of the outputs, but not all, are
// candidates, and each range's own best lower bound sits below the row's.
TEST(QLinearRefine, AnySplitGivesTheSameBlocksAndBits) {
  std::mt19937 rng(99);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
    if (!isa_supported(isa)) continue;
    for (const auto& [f, group, block] : {std::tuple{WeightFormat::Int8, 8, 0}, std::tuple{WeightFormat::Lut4, 8, 0},
                                          std::tuple{WeightFormat::Blk4, 32, kBlockOffsets | kBlockF32}}) {
      const int64_t n = 1000, cols = 256, rows = 2;
      RandomCase c(rng, {f, n, cols, group, rows, block});
      Int8Activations one;
      quantize_activations(Isa::Scalar, c.x.data(), rows, cols, c.w.layout(), 1, one);
      std::vector<float> y0(rows * n), y1(rows * n);
      qlinear(isa, c.w, one, nullptr, 0, n, y0.data(), n);
      const RefineHead head = make_refine_head(c.w);
      std::vector<float> serial;
      RefineScratch scratch;
      std::vector<std::vector<int64_t>> want(rows);
      // Biases that cancel row 0's products up to ±spread: widen the spread
      // until under 60% of the blocks stay candidates.
      for (float spread = 1e-3f;; spread *= 2) {
        ASSERT_LT(spread, 1e5f);
        std::mt19937 noise(7);
        for (int64_t m = 0; m < n; ++m)
          c.bias[m] = -y0[m] + std::uniform_real_distribution<float>(-spread, spread)(noise);
        qlinear(isa, c.w, one, c.bias.data(), 0, n, y1.data(), n);
        serial = y1;
        refine_top_outputs(isa, c.w, head, c.x.data(), rows, c.bias.data(), serial.data(), n, scratch);
        for (int64_t t = 0; t < rows; ++t) {
          refine_plan_row(isa, c.w, head, c.x.data(), y1.data(), n, t, scratch);
          want[t] = scratch.blocks;
        }
        if (want[0].size() * 10 < static_cast<size_t>(n / 4) * 6) break;
      }
      ASSERT_GT(want[0].size(), 10u) << "the spread should keep many candidates";
      for (int trial = 0; trial < 6; ++trial) {
        // Ranges of whole blocks of 4, scanned back to front.
        std::vector<int64_t> cuts = {0, n};
        for (int k = 0; k < trial; ++k) cuts.push_back(4 * static_cast<int64_t>(rng() % (n / 4)));
        std::sort(cuts.begin(), cuts.end());
        std::vector<float> y = y1;
        refine_prepare(isa, c.w, head, c.x.data(), rows, static_cast<int64_t>(cuts.size()), scratch);
        for (size_t i = cuts.size() - 1; i > 0; --i)
          if (cuts[i - 1] < cuts[i]) refine_scan_range(isa, c.w, head, y.data(), n, rows, cuts[i - 1], cuts[i], scratch);
        for (int64_t t = 0; t < rows; ++t) {
          const int64_t blocks = refine_plan_row(isa, c.w, head, c.x.data(), y.data(), n, t, scratch);
          ASSERT_EQ(scratch.blocks, want[t]) << isa_name(isa) << " trial " << trial << " row " << t;
          const int64_t split = blocks > 0 ? static_cast<int64_t>(rng() % blocks) : 0;
          refine_blocks(isa, c.w, scratch, c.bias.data(), split, blocks, y.data() + t * n);  // the back first
          refine_blocks(isa, c.w, scratch, c.bias.data(), 0, split, y.data() + t * n);
        }
        ASSERT_TRUE(same_bits(y, serial)) << isa_name(isa) << " trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels

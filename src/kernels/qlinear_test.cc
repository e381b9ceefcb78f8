// Integer-dot linear kernels: every instruction set (avx2 with and without
// AVX-VNNI) gives the scalar twin's bits; the twin stays within the error
// the int8 roundings allow of the f32 reference (ref::linear_any on the same
// stored weight); activation quantization follows its documented layout.
#include "kernels/qlinear.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/qlinear_test_util.h"
#include "kernels/reference/kernels.h"

namespace tessera::kernels {
namespace {

using test_fixtures::kBlockSuper;
using test_fixtures::RandomWeight;
using test_fixtures::random_acts;
using test_fixtures::same_bits;
using test_fixtures::call_split;
using test_fixtures::LinearShape;
using test_fixtures::RandomCase;
using test_fixtures::expect_within_rounding_bound;
using test_fixtures::AvxVnniScope;
using test_fixtures::KernelLevel;
using test_fixtures::supported_levels;
using test_fixtures::kBlockF32;
using test_fixtures::kBlockOffsets;

std::vector<float> run(Isa isa, const QLinearWeights& w, const Int8Activations& a, const float* bias, int64_t split) {
  const int64_t n = w.rows();
  std::vector<float> y(a.rows * n, NAN);
  call_split(n, split, [&](int64_t b, int64_t e) { qlinear(isa, w, a, bias, b, e, y.data(), n); });
  return y;
}

const LinearShape kShapes[] = {
    {WeightFormat::Lut4, 16, 64, 16, 1},   {WeightFormat::Lut4, 37, 576, 1, 1},   {WeightFormat::Lut4, 48, 640, 16, 3},
    {WeightFormat::Lut4, 9, 192, 3, 2},    {WeightFormat::Lut4, 64, 1536, 64, 1}, {WeightFormat::Int8, 13, 576, 0, 1},
    {WeightFormat::Int8, 40, 64, 0, 5},    {WeightFormat::Int8, 7, 896, 0, 2},   {WeightFormat::Lut4, 12, 576, 4, 37},
    {WeightFormat::Int8, 9, 128, 0, 33},   {WeightFormat::Lut3, 16, 64, 16, 1},   {WeightFormat::Lut3, 37, 576, 1, 1},
    {WeightFormat::Lut3, 48, 640, 16, 3},  {WeightFormat::Lut3, 12, 1536, 4, 37}, {WeightFormat::Lut2, 16, 64, 8, 1},
    {WeightFormat::Lut2, 37, 576, 1, 2},   {WeightFormat::Lut2, 64, 960, 64, 1},  {WeightFormat::Lut2, 12, 192, 4, 33},
    // blk4 / blk8 (a quantized GGUF's values): every block width and storage,
    // with and without offsets; 192 / 576 / 640 columns end on half a lut4 chunk.
    {WeightFormat::Blk4, 16, 64, 32, 1, 0},
    {WeightFormat::Blk4, 37, 576, 32, 1, kBlockOffsets},
    {WeightFormat::Blk4, 19, 640, 32, 3, kBlockF32 | kBlockOffsets},
    {WeightFormat::Blk4, 12, 192, 32, 33, kBlockF32},
    {WeightFormat::Blk8, 13, 576, 32, 1, 0},
    {WeightFormat::Blk8, 21, 640, 16, 2, kBlockF32},
    {WeightFormat::Blk8, 9, 128, 16, 33, kBlockOffsets | kBlockF32},
    {WeightFormat::Blk8, 40, 64, 32, 5, kBlockOffsets},
    // Compact blocked weights (blk5 / blk6 codes, super-block scales), which
    // the lane kernels read expanded.
    {WeightFormat::Blk4, 21, 512, 32, 3, kBlockSuper | kBlockOffsets},
    {WeightFormat::Blk5, 13, 576, 32, 2, 0},
    {WeightFormat::Blk5, 9, 256, 32, 17, kBlockSuper | kBlockOffsets},
    {WeightFormat::Blk6, 19, 512, 16, 1, kBlockSuper},
    {WeightFormat::Blk6, 12, 192, 32, 5, kBlockF32},
};

TEST(QLinear, EveryIsaGivesTheScalarTwinsBitsForAnyRowSplit) {
  std::mt19937 rng(7);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const QLinearWeights& w = c.w;
    const std::vector<float>& x = c.x;
    const std::vector<float>& bias = c.bias;
    for (int passes : {1, 2})
      for (int qmax : {kActQmax, kActQmaxNarrow}) {
        Int8Activations a;
        quantize_activations(Isa::Scalar, x.data(), s.tokens, s.cols, w.layout(), passes, a, qmax);
        const std::vector<float> want = run(Isa::Scalar, w, a, bias.data(), 0);
        for (const KernelLevel& level : supported_levels({Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon})) {
          const AvxVnniScope vnni(level);
          for (int64_t split : {int64_t{0}, int64_t{1}, s.rows / 2, s.rows - 3}) {
            EXPECT_TRUE(same_bits(run(level.isa, w, a, bias.data(), split), want))
                << weight_format_name(s.format) << " [" << s.rows << ", " << s.cols << "] " << level.name()
                << " split " << split << " passes " << passes << " qmax " << qmax;
          }
        }
      }
  }
}

// The worst case of the AVX2 unsigned-weight dot: weights at both ends of
// the int8 range (u = 0 and 255) against activations at ±63 in every
// column, so every vpmaddubsw pair is as large as it can be. Integer sums
// that saturated would differ from the scalar twin's exact ones.
TEST(QLinear, NarrowActivationsNeverSaturateTheVectorDots) {
  std::mt19937 rng(17);
  const int64_t rows = 8, cols = 256;
  for (WeightFormat f : {WeightFormat::Int8, WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2}) {
    RandomWeight rw(rng, f, rows, cols, 8);
    if (f == WeightFormat::Int8) {
      for (int64_t i = 0; i < rows * cols; ++i) rw.data[i] = (i / cols) % 2 == 0 ? 0x7f : 0x80;  // +127, -128
    } else {
      for (size_t i = 0; i < rw.palette.size(); ++i) rw.palette[i] = i % 2 == 0 ? 1.0f : -1.0f;  // ±127 on the grid
    }
    const QLinearWeights w(rw.view);
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> x(cols);
      for (int64_t c = 0; c < cols; ++c) x[c] = (c % 3 == 2 ? -sign : sign) * 2.5f;  // |q| = 63 everywhere
      for (int passes : {1, 2}) {
        Int8Activations a;
        quantize_activations(Isa::Scalar, x.data(), 1, cols, w.layout(), passes, a, kActQmaxNarrow);
        const std::vector<float> want = run(Isa::Scalar, w, a, nullptr, 0);
        for (const KernelLevel& level : supported_levels({Isa::Avx2, Isa::Avx512, Isa::Neon})) {
          const AvxVnniScope vnni(level);
          EXPECT_TRUE(same_bits(run(level.isa, w, a, nullptr, 0), want))
              << weight_format_name(f) << " " << level.name() << " sign " << sign << " passes " << passes;
        }
      }
    }
  }
}

TEST(QLinear, TokensOfOneCallMatchOneTokenCalls) {
  std::mt19937 rng(8);
  for (WeightFormat f : {WeightFormat::Lut4, WeightFormat::Int8, WeightFormat::Lut3, WeightFormat::Lut2,
                         WeightFormat::Blk4, WeightFormat::Blk8}) {
    // blk4 / blk8: 32-column blocks, and 35 tokens take the buffered walk
    // (kernels/qlinear_avx512.cc) where one token takes the per-token one.
    const bool blocked = f == WeightFormat::Blk4 || f == WeightFormat::Blk8;
    RandomWeight rw(rng, f, 24, 320, blocked ? 32 : 8);
    const QLinearWeights w(rw.view);
    const int64_t T = 35;  // more than two token tiles
    const std::vector<float> x = random_acts(rng, T, 320);
    Int8Activations all, one;
    quantize_activations(Isa::Scalar, x.data(), T, 320, w.layout(), 2, all);
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
      if (!isa_supported(isa)) continue;
      const std::vector<float> batched = run(isa, w, all, nullptr, 0);
      for (int64_t t = 0; t < T; ++t) {
        quantize_activations(Isa::Scalar, x.data() + t * 320, 1, 320, w.layout(), 2, one);
        const std::vector<float> single = run(isa, w, one, nullptr, 0);
        EXPECT_EQ(std::memcmp(single.data(), batched.data() + t * 24, 24 * sizeof(float)), 0) << isa_name(isa) << " t " << t;
      }
    }
  }
}

// The twin against the f32 reference on the same stored weight. The only
// differences are roundings: each activation by at most half a step of its
// block (amax/2Q, Q = qmax: 127 or 63) with one pass; with two, by half a
// step of its residual's block (the residual is within amax/2Q of zero, its
// step a Q-th of that: amax/(2Q)², a bound a one-pass kernel fails); and each lut4 palette entry by
// half a step of its group's int8 grid (expect_within_rounding_bound). A
// wrong lane, block or nibble breaks it at once.
TEST(QLinear, ScalarTwinIsWithinTheRoundingBoundOfTheReference) {
  std::mt19937 rng(9);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const RandomWeight& rw = c.rw;
    const QLinearWeights& w = c.w;
    const std::vector<float>& x = c.x;
    for (int passes : {1, 2})
      for (int qmax : {kActQmax, kActQmaxNarrow}) {
        Int8Activations a;
        quantize_activations(Isa::Scalar, x.data(), s.tokens, s.cols, w.layout(), passes, a, qmax);
        const double half_step = 1.0 / (2.0 * qmax);
        const double act_step = passes == 1 ? half_step : 1.01 * half_step * half_step;
        auto act_error = [&](int64_t t, int64_t c) {  // the column's block amax times the step
          const int64_t b0 = c / kActBlock * kActBlock;
          float amax = 0;
          for (int64_t k = b0; k < std::min(s.cols, b0 + kActBlock); ++k) amax = std::max(amax, std::fabs(x[t * s.cols + k]));
          return amax * act_step;
        };
        expect_within_rounding_bound(rw, x, s.tokens, run(Isa::Scalar, w, a, nullptr, 0), act_error,
                                     std::string(weight_format_name(s.format)) + " passes " + std::to_string(passes) +
                                         " qmax " + std::to_string(qmax));
      }
  }
}

TEST(QLinear, ActivationLayoutsHoldTheRoundedValuesWhereTheDocSays) {
  std::mt19937 rng(10);
  const int64_t cols = 192;  // one full lut4 chunk and half of another
  const std::vector<float> x = random_acts(rng, 1, cols);
  // Where the doc puts column c (written out here, not act_position()).
  auto where = [](ActLayout layout, int64_t c) -> int64_t {
    const int64_t m = c / 128, k = c % 128;
    if (layout == ActLayout::Lut4Pairs) return m * 128 + (k % 2 == 0 ? k / 2 : 64 + k / 2);
    if (layout == ActLayout::BlockHalves) return m * 128 + (k % 8 < 4 ? 4 * (k / 8) + k % 8 : 64 + 4 * (k / 8) + k % 8 - 4);
    return c;
  };
  for (ActLayout layout : {ActLayout::Natural, ActLayout::Lut4Pairs, ActLayout::BlockHalves}) {
    Int8Activations a;
    quantize_activations(Isa::Scalar, x.data(), 1, cols, layout, 1, a);
    const int64_t cc = act_chunk_cols(layout);
    ASSERT_EQ(a.chunks, (cols + cc - 1) / cc);
    for (int64_t c = 0; c < a.chunks * cc; ++c) {
      const int64_t m = c / cc, k = c % cc;
      const int64_t pos = where(layout, c);
      EXPECT_EQ(act_position(layout, c), pos);
      int expect = 0;
      float block_scale = 0;
      if (c < cols) {
        float amax = 0;
        for (int64_t i = c / kActBlock * kActBlock; i < std::min(cols, c / kActBlock * kActBlock + kActBlock); ++i) amax = std::max(amax, std::fabs(x[i]));
        if (amax > 0) {
          expect = static_cast<int>(std::nearbyint(x[c] * (127.0f / amax)));
          block_scale = amax / 127.0f;
        }
      }
      EXPECT_EQ(a.q[pos], expect) << "column " << c;
      const int64_t lane = (k / (cc / 16));
      EXPECT_EQ(a.scale16[m * 16 + lane], block_scale) << "column " << c;
    }
    // Correction terms: -128 · Σ q over each lane's columns.
    for (int64_t m = 0; m < a.chunks; ++m)
      for (int j = 0; j < 16; ++j) {
        int32_t sum = 0;
        for (int64_t k = 0; k < cc / 16; ++k) {
          const int64_t c = m * cc + j * (cc / 16) + k;
          sum += a.q[where(layout, c)];
        }
        EXPECT_EQ(a.bias16[m * 16 + j], -128 * sum);
      }
  }
}

// The kernels' weight values are the stored weight's: for every column,
// table entry index(n, c) times out_scale is decode_row's value (up to the
// palette's rounding to the int8 grid), and index(n, c) reads the bit string
// the format defines (core/weight_format.h), checked on hand-set bits.
TEST(QLinear, LutIndicesFollowTheStoredBitString) {
  std::mt19937 rng(12);
  for (WeightFormat f : {WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2}) {
    const int bits = lut_bits(f);
    RandomWeight rw(rng, f, 8, 128, 4);
    const QLinearWeights w(rw.view);
    for (int64_t n = 0; n < 8; ++n)
      for (int64_t c = 0; c < 128; ++c) {
        int expect = 0;
        for (int b = 0; b < bits; ++b) {
          const int64_t bit = c * bits + b;
          expect |= ((rw.data[n * w.row_bytes() + bit / 8] >> (bit % 8)) & 1) << b;
        }
        ASSERT_EQ(w.index(n, c), expect) << weight_format_name(f) << " row " << n << " column " << c;
        ASSERT_EQ(w.value(n, c), w.table(n)[expect]);
        for (int j = expect; j < 64; j += 1 << bits) ASSERT_EQ(w.table(n)[j], w.table(n)[expect]);
      }
  }
}

TEST(QLinear, UnsupportedWeightsAreRefused) {
  std::mt19937 rng(11);
  RandomWeight odd(rng, WeightFormat::Lut4, 4, 72, 4);  // 72 columns: not a multiple of 64
  EXPECT_FALSE(QLinearWeights::supported(odd.view));
  EXPECT_THROW(QLinearWeights{odd.view}, Error);
  RandomWeight odd3(rng, WeightFormat::Lut3, 4, 200, 4);
  EXPECT_FALSE(QLinearWeights::supported(odd3.view));
  RandomWeight ok(rng, WeightFormat::Int8, 4, 128, 0);
  EXPECT_TRUE(QLinearWeights::supported(ok.view));
  RandomWeight ok2(rng, WeightFormat::Lut2, 4, 128, 2);
  EXPECT_TRUE(QLinearWeights::supported(ok2.view));
  WeightView f32 = ok.view;
  f32.format = WeightFormat::F32;
  EXPECT_FALSE(QLinearWeights::supported(f32));
  RandomWeight blk4(rng, WeightFormat::Blk4, 4, 128, 32);
  EXPECT_TRUE(QLinearWeights::supported(blk4.view));
  WeightView blk4_16 = blk4.view;
  blk4_16.block_cols = 16;  // blk4 blocks are 32 columns
  EXPECT_FALSE(QLinearWeights::supported(blk4_16));
  WeightView no_blocks = blk4.view;
  no_blocks.block_params = nullptr;
  EXPECT_FALSE(QLinearWeights::supported(no_blocks));
}

// Expanded, a compact weight holds its stored values: codes as blk8 bytes,
// block values as f32; unexpanded it reads them through its view and runs
// no lane kernel.
TEST(QLinear, CompactWeightsExpandToTheirValues) {
  std::mt19937 rng(13);
  for (const LinearShape& s : kShapes) {
    if (!is_blocked(s.format)) continue;
    RandomWeight rw(rng, s.format, s.rows, s.cols, s.group, s.block);
    ASSERT_EQ(rw.view.compact_blocks(), s.format == WeightFormat::Blk5 || s.format == WeightFormat::Blk6 ||
                                            (s.block & kBlockSuper) != 0);
    const QLinearWeights expanded(rw.view), lazy(rw.view, QLinearWeights::Expand::No);
    EXPECT_TRUE(expanded.kernel_ready());
    EXPECT_EQ(lazy.kernel_ready(), !rw.view.compact_blocks());
    if (rw.view.compact_blocks()) {
      EXPECT_EQ(expanded.bits(), s.format == WeightFormat::Blk4 ? 4 : 8);
      EXPECT_TRUE(expanded.block_f32() || !(s.block & kBlockSuper));
    }
    for (int64_t n = 0; n < s.rows; ++n) {
      for (int64_t c = 0; c < s.cols; ++c) {
        ASSERT_EQ(expanded.value(n, c), rw.view.block_value(n, c));
        ASSERT_EQ(lazy.value(n, c), rw.view.block_value(n, c));
      }
      for (int64_t b = 0; b < s.cols / s.group; ++b) {
        ASSERT_EQ(expanded.block_scale(n, b), rw.view.block_scale(n, b));
        ASSERT_EQ(lazy.block_scale(n, b), rw.view.block_scale(n, b));
        if (s.block & kBlockOffsets) {
          ASSERT_EQ(expanded.block_offset(n, b), rw.view.block_offset(n, b));
        }
      }
    }
    if (!lazy.kernel_ready()) {
      const std::vector<float> x = random_acts(rng, 1, s.cols);
      Int8Activations a;
      quantize_activations(Isa::Scalar, x.data(), 1, s.cols, lazy.layout(), 1, a);
      std::vector<float> y(s.rows);
      EXPECT_THROW(qlinear(Isa::Scalar, lazy, a, nullptr, 0, s.rows, y.data(), s.rows), Error);
    }
  }
}

TEST(QLinear, BlockedCodebookEntriesMustBeInt8) {
  std::mt19937 rng(12);
  RandomWeight rw(rng, WeightFormat::Blk4, 4, 128, 32);
  rw.palette[3] = 0.5f;
  EXPECT_THROW(QLinearWeights{rw.view}, Error);
  rw.palette[3] = 128.0f;
  EXPECT_THROW(QLinearWeights{rw.view}, Error);
}

}  // namespace
}  // namespace tessera::kernels

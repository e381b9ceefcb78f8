// The AVX2, AVX-512 and NEON activation quantizers against their scalar twin: identical bytes,
// scales, corrections and residuals, in the full and the narrow range, on random rows of every shape class
// (whole chunks, partial chunks, partial blocks), with all-zero blocks,
// subnormals, huge values, exact ties of the rounding, and rows holding NaN
// or infinity (which the vector paths hand to the scalar one).
#include "kernels/int8_activations.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera::kernels {
namespace {

template <typename Vec>
bool same_bytes(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

std::vector<float> random_row_set(std::mt19937& rng, int64_t rows, int64_t cols, int flavour) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) {
    float v = normal(rng);
    switch (flavour) {
      case 1: v *= 1e30f; break;                                   // huge
      case 2: v *= 1e-40f; break;                                  // subnormal
      case 3: v = static_cast<float>(static_cast<int>(v * 8)) * 0.5f; break;  // halves: rounding ties
      default: if (pick(rng) == 0) v *= 50.0f;                     // outlier channels
    }
    x[i] = v;
  }
  // All-zero blocks (and a -0), so zero scales appear mid-row.
  for (int64_t c = 0; c < std::min<int64_t>(cols, 8); ++c) x[static_cast<size_t>(c)] = c == 3 ? -0.0f : 0.0f;
  return x;
}

// The vector levels this CPU has.
std::vector<Isa> vector_levels() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Neon})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

TEST(Int8Activations, VectorLevelsGiveTheScalarTwinsBits) {
  if (vector_levels().empty()) GTEST_SKIP() << "no vector level here";
  std::mt19937 rng(11);
  for (int64_t cols : {64, 128, 100, 129, 576, 1536, 4864, 8, 3}) {
    for (ActLayout layout : {ActLayout::Natural, ActLayout::Lut4Pairs, ActLayout::BlockHalves}) {
      for (int passes : {1, 2}) {
        for (int flavour = 0; flavour < 16; ++flavour) {
          const int64_t rows = 3;
          const int qmax = flavour / 4 % 2 == 0 ? kActQmax : kActQmaxNarrow;
          const int64_t block = flavour >= 8 ? kActBlockCoarse : kActBlock;
          const std::vector<float> x = random_row_set(rng, rows, cols, flavour % 4);
          Int8Activations a;
          quantize_activations(Isa::Scalar, x.data(), rows, cols, layout, passes, a, qmax, block);
          std::vector<float> ra(static_cast<size_t>(cols));
          activation_residual(Isa::Scalar, x.data(), cols, ra.data());
          for (Isa isa : vector_levels()) {
            const std::string at = std::string(isa_name(isa)) + " cols " + std::to_string(cols) + " passes " +
                                   std::to_string(passes) + " flavour " + std::to_string(flavour) +
                                   " qmax " + std::to_string(qmax) + " block " + std::to_string(block) +
                                   (layout == ActLayout::Natural ? " natural" : layout == ActLayout::Lut4Pairs ? " pairs" : " halves");
            Int8Activations b;
            quantize_activations(isa, x.data(), rows, cols, layout, passes, b, qmax, block);
            EXPECT_TRUE(same_bytes(a.q, b.q)) << at;
            EXPECT_TRUE(same_bytes(a.scale16, b.scale16)) << at;
            EXPECT_TRUE(same_bytes(a.bias16, b.bias16)) << at;
            std::vector<float> rb(static_cast<size_t>(cols));
            activation_residual(isa, x.data(), cols, rb.data());
            EXPECT_TRUE(same_bytes(ra, rb)) << at;
          }
        }
      }
    }
  }
}

// A scale per 32 columns: every lane of a block holds the block's max|x| /
// 127, its largest |q| is 127, and other block sizes are refused.
TEST(Int8Activations, CoarseBlocksShareOneScale) {
  std::mt19937 rng(13);
  const int64_t cols = 200;
  const std::vector<float> x = random_row_set(rng, 2, cols, 0);
  Int8Activations a;
  quantize_activations(Isa::Scalar, x.data(), 2, cols, ActLayout::Natural, 1, a, kActQmax, kActBlockCoarse);
  EXPECT_EQ(a.block_cols, kActBlockCoarse);
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t c0 = 0; c0 < cols; c0 += kActBlockCoarse) {
      float amax = 0;
      int qmax = 0;
      for (int64_t c = c0; c < std::min(cols, c0 + kActBlockCoarse); ++c) {
        amax = std::max(amax, std::fabs(x[t * cols + c]));
        qmax = std::max(qmax, std::abs(static_cast<int>(a.q_row(t)[c])));
      }
      for (int64_t lane = c0 / 4; lane < std::min(cols, c0 + kActBlockCoarse) / 4; ++lane)
        EXPECT_EQ(a.scale_row(t)[lane], amax / 127.0f) << "row " << t << " lane " << lane;
      EXPECT_EQ(qmax, amax > 0 ? 127 : 0) << "row " << t << " block at " << c0;
    }
  EXPECT_THROW(quantize_activations(Isa::Scalar, x.data(), 2, cols, ActLayout::Natural, 1, a, kActQmax, 16), Error);
}

// The narrow range (the AVX2 kernels' unsigned-weight dot relies on it):
// every q within ±63, the block maximum at exactly ±63, the scale max / 63,
// and bias16 = −128 · Σq of each lane; a range outside 1..127 is refused.
TEST(Int8Activations, NarrowRangeHoldsItsBoundAndScale) {
  std::mt19937 rng(13);
  const int64_t cols = 576;
  const std::vector<float> x = random_row_set(rng, 1, cols, 0);
  for (int passes : {1, 2}) {
    Int8Activations a;
    quantize_activations(Isa::Scalar, x.data(), 1, cols, ActLayout::Lut4Pairs, passes, a, kActQmaxNarrow);
    EXPECT_EQ(a.qmax, kActQmaxNarrow);
    for (int pass = 0; pass < passes; ++pass) {
      const int8_t* q = a.q_row(0, pass);
      for (int64_t i = 0; i < a.row_bytes(); ++i) ASSERT_LE(std::abs(q[i]), kActQmaxNarrow) << "pass " << pass;
    }
    for (int64_t block = 1; block < cols / kActBlock; ++block) {  // block 0 is all zero
      float amax = 0.0f;
      int peak = 0;
      for (int64_t c = block * kActBlock; c < (block + 1) * kActBlock; ++c) {
        amax = std::max(amax, std::fabs(x[c]));
        peak = std::max(peak, std::abs(static_cast<int>(a.q_row(0)[act_position(ActLayout::Lut4Pairs, c)])));
      }
      EXPECT_EQ(peak, kActQmaxNarrow) << "block " << block;
      EXPECT_EQ(a.scale_row(0)[block], amax / 63.0f) << "block " << block;
    }
    for (int64_t lane = 0; lane < a.chunks * 16; ++lane) {
      int sum = 0;
      for (int64_t c = lane * kActBlock; c < std::min(cols, (lane + 1) * kActBlock); ++c)
        sum += a.q_row(0)[act_position(ActLayout::Lut4Pairs, c)];
      EXPECT_EQ(a.bias_row(0)[lane], -128 * sum) << "lane " << lane;
    }
  }
  Int8Activations a;
  EXPECT_THROW(quantize_activations(Isa::Scalar, x.data(), 1, cols, ActLayout::Natural, 1, a, 0), Error);
  EXPECT_THROW(quantize_activations(Isa::Scalar, x.data(), 1, cols, ActLayout::Natural, 1, a, 128), Error);
}

TEST(Int8Activations, NonFiniteRowsTakeTheScalarRowsResult) {
  std::mt19937 rng(12);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    // First, second and last 8 columns of a 32-column block: a vector max
    // that drops a NaN met before finite values would miss the middle one.
    for (int64_t at : {128, 137, 159}) {
      std::vector<float> x = random_row_set(rng, 2, 300, 0);
      x[static_cast<size_t>(at)] = bad;  // row 0, mid-row; row 1 stays finite
      for (int64_t block : {kActBlock, kActBlockCoarse}) {
        for (ActLayout layout : {ActLayout::Natural, ActLayout::Lut4Pairs, ActLayout::BlockHalves}) {
          Int8Activations a;
          quantize_activations(Isa::Scalar, x.data(), 2, 300, layout, 2, a, kActQmax, block);
          // The block holding it has a non-finite scale, so outputs become NaN.
          EXPECT_FALSE(std::isfinite(a.scale_row(0)[at / (layout == ActLayout::Natural ? 4 : 8)]));
          for (Isa isa : vector_levels()) {
            const std::string where = std::string(isa_name(isa)) + " at " + std::to_string(at) + " block " +
                                      std::to_string(block);
            Int8Activations b;
            quantize_activations(isa, x.data(), 2, 300, layout, 2, b, kActQmax, block);
            EXPECT_TRUE(same_bytes(a.q, b.q)) << where;
            EXPECT_TRUE(same_bytes(a.bias16, b.bias16)) << where;
            EXPECT_TRUE(same_bytes(a.scale16, b.scale16)) << where;  // NaN scales compared as bits
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels

// The interleaved linear (kernels/interleaved_linear.h): the layout holds the
// stored weight's values, every level gives the scalar twin's bits for any
// split of the row groups and any number of tokens, every token of an
// M-token call has the bits of a one-token call, and the twin stays within
// the one-pass rounding bound of the f32 reference.
#include "kernels/interleaved_linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/qlinear_test_util.h"

namespace tessera::kernels {
namespace {

using test_fixtures::kBlockF32;
using test_fixtures::kBlockOffsets;
using test_fixtures::kBlockSuper;
using test_fixtures::KernelLevel;
using test_fixtures::RandomWeight;
using test_fixtures::random_acts;
using test_fixtures::same_bits;
using test_fixtures::supported_levels;

// How a case's values are drawn: the stored weight's range decides the
// layout's weight_offset and which dot each level takes.
enum class Values {
  Wide,      // blk4: a codebook over −128..127 (IQ4_NL-like); blk5 / blk6: a
             // codebook of other values (laid out as bytes); blk8: any byte
  Unsigned,  // blk4 ... blk6: the codes themselves (Q4_1, Q4_K, Q5_1, Q5_K)
  Shifted,   // blk4: code − 8 (Q4_0); blk5 / blk6: code − 16 / − 32 (Q5_0,
             // Q6_K); blk8: −32..31 (Q6_K before blk6)
  Spaced,    // blk4: 4·code, 0..60 (a lookup whose pairs still add in int16)
  Spaced8,   // blk4: 8·code, 0..120 (a lookup of unsigned values over 64)
};

struct Shape {
  WeightFormat format;
  int64_t rows, cols, block_cols;
  int block;  // kBlockSuper | kBlockOffsets
  Values values;
};

// Every form the vector kernels are compiled for (kernels/interleaved_walk.h,
// VectorForms), each with the value ranges that pick each level's dots.
const Shape kShapes[] = {
    {WeightFormat::Blk4, 16, 64, 32, 0, Values::Unsigned},                     // Q4_0 form
    {WeightFormat::Blk4, 37, 576, 32, kBlockOffsets, Values::Unsigned},        // Q4_1
    {WeightFormat::Blk4, 19, 640, 32, kBlockOffsets, Values::Shifted},         // Q4_1, weight_offset 8
    {WeightFormat::Blk4, 50, 192, 32, 0, Values::Wide},                        // IQ4_NL: signed dots
    {WeightFormat::Blk4, 33, 256, 32, 0, Values::Spaced},                      // IQ4_NL: int16 pairs
    {WeightFormat::Blk8, 13, 576, 32, 0, Values::Wide},                        // Q8_0: signed dots
    {WeightFormat::Blk8, 21, 640, 16, kBlockSuper, Values::Shifted},           // Q3_K
    {WeightFormat::Blk8, 9, 128, 16, kBlockOffsets | kBlockSuper, Values::Shifted},  // Q2_K
    {WeightFormat::Blk8, 40, 64, 32, 0, Values::Shifted},                      // Q8_0: unsigned dots
    {WeightFormat::Blk4, 35, 512, 32, kBlockSuper | kBlockOffsets, Values::Unsigned},  // Q4_K
    {WeightFormat::Blk5, 21, 576, 32, 0, Values::Shifted},                     // Q5_0
    {WeightFormat::Blk5, 17, 256, 32, kBlockSuper | kBlockOffsets, Values::Unsigned},  // Q5_K
    {WeightFormat::Blk5, 16, 128, 32, kBlockOffsets, Values::Unsigned},        // Q5_1
    {WeightFormat::Blk6, 29, 512, 16, kBlockSuper, Values::Shifted},           // Q6_K
    {WeightFormat::Blk4, 18, 192, 32, 0, Values::Spaced8},                     // IQ4_NL: unsigned dots
    {WeightFormat::Blk6, 16, 128, 16, kBlockSuper | kBlockOffsets, Values::Wide},  // bytes: Q2_K form
    {WeightFormat::Blk8, 20, 256, 16, kBlockSuper | kBlockOffsets, Values::Wide},  // Q2_K: signed dots
};

std::string name(const Shape& s) {
  return std::string(weight_format_name(s.format)) + " [" + std::to_string(s.rows) + ", " + std::to_string(s.cols) +
         "] blocks " + std::to_string(s.block_cols) + " flags " + std::to_string(s.block) + " values " +
         std::to_string(static_cast<int>(s.values));
}

// A stored weight of the shape with its values drawn as s.values says.
struct Case {
  RandomWeight rw;
  Case(std::mt19937& rng, const Shape& s) : rw(rng, s.format, s.rows, s.cols, s.block_cols, s.block) {
    if (s.format != WeightFormat::Blk8) {
      const int entries = 1 << block_code_bits(s.format);
      for (int i = 0; i < entries; ++i) {
        if (s.values == Values::Unsigned) rw.palette[i] = static_cast<float>(i);
        if (s.values == Values::Shifted) rw.palette[i] = static_cast<float>(i - entries / 2);
        if (s.values == Values::Spaced) rw.palette[i] = static_cast<float>(4 * i);
        if (s.values == Values::Spaced8) rw.palette[i] = static_cast<float>(8 * i);
        if (s.values == Values::Wide && s.format != WeightFormat::Blk4)
          rw.palette[i] = static_cast<float>((i * 37 + 11) % 256 - 128);  // not consecutive
      }
    } else if (s.values == Values::Shifted) {
      for (uint8_t& b : rw.data) b = static_cast<uint8_t>(static_cast<int8_t>(b % 64 - 32));
    }
  }
};

std::vector<float> run(Isa isa, const InterleavedWeights& w, const Int8Activations& a, const float* bias,
                       int64_t split) {
  const int64_t n = w.rows(), groups = w.groups();
  std::vector<float> y(a.rows * n, NAN);
  if (split <= 0 || split >= groups) {
    interleaved_linear(isa, w, a, bias, 0, groups, y.data(), n);
  } else {
    interleaved_linear(isa, w, a, bias, 0, split, y.data(), n);
    interleaved_linear(isa, w, a, bias, split, groups, y.data(), n);
  }
  return y;
}

// One-pass activations with a scale per act_block columns: 8 (the head's)
// or 32 (the fast level's layers: one segment per weight block).
Int8Activations quantize(const std::vector<float>& x, int64_t tokens, int64_t cols, int64_t act_block = kActBlock) {
  Int8Activations a;
  quantize_activations(Isa::Scalar, x.data(), tokens, cols, ActLayout::Natural, 1, a, kActQmax, act_block);
  return a;
}

constexpr int64_t kActBlocks[] = {kActBlock, kActBlockCoarse};

TEST(InterleavedLinear, LayoutHoldsTheStoredValuesScalesAndOffsets) {
  std::mt19937 rng(1);
  for (const Shape& s : kShapes) {
    Case c(rng, s);
    const QLinearWeights q(c.rw.view);
    const InterleavedWeights w(c.rw.view);
    // Codes at the stored bits (blk5 / blk6 with a codebook that is not
    // consecutive integers: a byte each); block values as stored.
    const bool packed = s.format != WeightFormat::Blk8 && (s.format == WeightFormat::Blk4 || s.values != Values::Wide);
    const int64_t bits = packed ? block_code_bits(s.format) : 8, blocks = s.cols / s.block_cols;
    const int64_t params = s.block & kBlockSuper ? blocks + 2 * (s.cols / c.rw.view.block_super)
                                                 : blocks * (s.block & kBlockF32 ? 4 : 2);
    EXPECT_EQ(w.code_bits(), bits) << name(s);
    EXPECT_EQ(w.bytes(), w.groups() * 16 * (s.cols * bits / 8 + params * (s.block & kBlockOffsets ? 2 : 1))) << name(s);
    EXPECT_EQ(w.small_unsigned(), s.values != Values::Wide) << name(s);
    for (int64_t n = 0; n < s.rows; ++n) {
      for (int64_t col = 0; col < s.cols; ++col) ASSERT_EQ(w.value(n, col), q.value(n, col)) << name(s) << " " << n << "," << col;
      for (int64_t b = 0; b < s.cols / s.block_cols; ++b) {
        ASSERT_EQ(w.scale(n, b), q.block_scale(n, b)) << name(s);
        if (s.block & kBlockOffsets) {
          ASSERT_EQ(w.offset(n, b), q.block_offset(n, b)) << name(s);
        }
      }
    }
  }
}

// Restored rows decode to the stored values bit for bit; blk4 and blk8
// rows with a value per block come back as the stored bytes.
TEST(InterleavedLinear, RestoredRowsAreTheStoredValues) {
  std::mt19937 rng(7);
  for (const Shape& s : kShapes) {
    Case c(rng, s);
    const QLinearWeights q(c.rw.view);
    const InterleavedWeights w(c.rw.view);
    const int64_t row_bytes = static_cast<int64_t>(weight_data_bytes(s.format, 1, s.cols));
    const int64_t width = s.block & kBlockF32 ? 4 : 2, blocks = s.cols / s.block_cols;
    const int64_t sections = s.block & kBlockOffsets ? 2 : 1;
    for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, s.rows}, {3, 7}, {s.rows - 1, s.rows}}) {
      InterleavedWeights::StoredRows out;
      w.restore_rows(n0, n1, out);
      std::vector<float> got(s.cols), want(s.cols);
      for (int64_t n = n0; n < n1; ++n) {
        decode_row(out.view, n - n0, got.data());
        decode_row(c.rw.view, n, want.data());
        ASSERT_TRUE(same_bits(got, want)) << name(s) << " row " << n;
      }
      if (c.rw.view.compact_blocks()) continue;
      ASSERT_EQ(out.data.size(), static_cast<size_t>((n1 - n0) * row_bytes)) << name(s);
      EXPECT_EQ(std::memcmp(out.data.data(), c.rw.data.data() + n0 * row_bytes, out.data.size()), 0) << name(s);
      for (int64_t sec = 0; sec < sections; ++sec)
        EXPECT_EQ(std::memcmp(out.block_params.data() + sec * (n1 - n0) * blocks * width,
                              c.rw.block_params.data() + (sec * s.rows + n0) * blocks * width,
                              static_cast<size_t>((n1 - n0) * blocks * width)),
                  0)
            << name(s) << " section " << sec;
    }
  }
}

// A form the vector kernels are not compiled for (no GGUF type transcodes
// to it) is not interleaved: the lane kernels run it.
TEST(InterleavedLinear, FormsWithoutVectorKernelsAreRefused) {
  std::mt19937 rng(7);
  for (const Shape& s : {Shape{WeightFormat::Blk4, 16, 64, 32, kBlockF32, Values::Unsigned},
                         Shape{WeightFormat::Blk4, 16, 64, 32, kBlockOffsets, Values::Wide},
                         Shape{WeightFormat::Blk8, 16, 64, 32, kBlockOffsets, Values::Shifted},
                         Shape{WeightFormat::Blk8, 16, 64, 16, 0, Values::Shifted}}) {
    Case c(rng, s);
    EXPECT_TRUE(QLinearWeights::supported(c.rw.view)) << name(s);
    EXPECT_FALSE(InterleavedWeights::supported(c.rw.view)) << name(s);
    EXPECT_THROW(InterleavedWeights{c.rw.view}, Error) << name(s);
  }
}

TEST(InterleavedLinear, EveryIsaGivesTheScalarTwinsBitsForAnySplitAndTokenCount) {
  std::mt19937 rng(2);
  for (const Shape& s : kShapes) {
    Case c(rng, s);
    const QLinearWeights q(c.rw.view);
    const InterleavedWeights w(c.rw.view);
    std::vector<float> bias(s.rows);
    for (float& b : bias) b = std::uniform_real_distribution<float>(-1, 1)(rng);
    for (int64_t tokens : {1, 2, 3, 7, 8, 9, 16, 17, 31, 40}) {
      const std::vector<float> x = random_acts(rng, tokens, s.cols);
      for (int64_t act_block : kActBlocks) {
        const Int8Activations a = quantize(x, tokens, s.cols, act_block);
        for (const float* bp : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
          const std::vector<float> want = run(Isa::Scalar, w, a, bp, 0);
          for (const KernelLevel& level : supported_levels({Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon}))
            for (int64_t split : {int64_t{0}, int64_t{1}, w.groups() / 2, w.groups() - 1})
              EXPECT_TRUE(same_bits(run(level.isa, w, a, bp, split), want))
                  << name(s) << " " << level.name() << " tokens " << tokens << " split " << split << " act block "
                  << act_block;
        }
      }
    }
  }
}

// Activations at ±127 in every column against weights at the ends of their
// range: every vpmaddubsw pair and int16 sum of the AVX2 dots is as large as
// it can be, so a saturating one would differ from the twin's exact sums.
TEST(InterleavedLinear, ExtremeValuesNeverSaturateTheVectorDots) {
  std::mt19937 rng(3);
  for (const Shape& s : kShapes) {
    Case c(rng, s);
    if (s.format == WeightFormat::Blk8) {
      const int8_t lo = s.values == Values::Wide ? -128 : -32, hi = s.values == Values::Wide ? 127 : 31;
      for (size_t i = 0; i < c.rw.data.size(); ++i) c.rw.data[i] = static_cast<uint8_t>((i / 3) % 2 ? lo : hi);
    } else if (s.format != WeightFormat::Blk4) {
      // Runs of the smallest and the largest codes.
      for (size_t i = 0; i < c.rw.data.size(); ++i) c.rw.data[i] = (i / 5) % 2 ? 0x00 : 0xff;
    }
    const QLinearWeights q(c.rw.view);
    const InterleavedWeights w(c.rw.view);
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> x(19 * s.cols);  // a tile of 16 (AMX) and 3 more
      for (int64_t i = 0; i < 19 * s.cols; ++i) x[i] = (i % 5 == 2 ? -sign : sign) * 3.0f;  // |q| = 127 everywhere
      for (int64_t act_block : kActBlocks) {
        const Int8Activations a = quantize(x, 19, s.cols, act_block);
        const std::vector<float> want = run(Isa::Scalar, w, a, nullptr, 0);
        for (const KernelLevel& level : supported_levels({Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon}))
          EXPECT_TRUE(same_bits(run(level.isa, w, a, nullptr, 0), want))
              << name(s) << " " << level.name() << " act block " << act_block;
      }
    }
  }
}

// Prefill, batched decode and verification all rest on this: token t of an
// M-token call has the bits of a call of token t alone, for M = 1..64.
TEST(InterleavedLinear, EveryTokenOfAnMTokenCallMatchesItsOneTokenCall) {
  std::mt19937 rng(4);
  for (const Shape& s : {kShapes[1], kShapes[4], kShapes[6], kShapes[10], kShapes[13]}) {
    Case c(rng, s);
    const QLinearWeights q(c.rw.view);
    const InterleavedWeights w(c.rw.view);
    const std::vector<float> x = random_acts(rng, 64, s.cols);
    for (int64_t act_block : kActBlocks)
      for (const KernelLevel& level : supported_levels({Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon})) {
        std::vector<std::vector<float>> single(64);
        for (int64_t t = 0; t < 64; ++t) {
          const std::vector<float> xt(x.begin() + t * s.cols, x.begin() + (t + 1) * s.cols);
          single[t] = run(level.isa, w, quantize(xt, 1, s.cols, act_block), nullptr, 0);
        }
        for (int64_t m = 1; m <= 64; ++m) {
          const std::vector<float> xm(x.begin(), x.begin() + m * s.cols);
          const std::vector<float> y = run(level.isa, w, quantize(xm, m, s.cols, act_block), nullptr, 0);
          for (int64_t t = 0; t < m; ++t)
            ASSERT_EQ(std::memcmp(y.data() + t * s.rows, single[t].data(), s.rows * sizeof(float)), 0)
                << name(s) << " " << level.name() << " M " << m << " token " << t << " act block " << act_block;
        }
      }
  }
}

// The twin against the f32 reference on the same stored weight: they differ
// by each activation's rounding (at most half a step, amax / 254, of its
// 8- or 32-column block) and f32 summation noise (test_fixtures::expect_within_rounding_bound).
TEST(InterleavedLinear, ScalarTwinIsWithinTheRoundingBoundOfTheReference) {
  std::mt19937 rng(5);
  for (const Shape& s : kShapes) {
    Case c(rng, s);
    const QLinearWeights q(c.rw.view);
    const InterleavedWeights w(c.rw.view);
    const int64_t tokens = 3;
    const std::vector<float> x = random_acts(rng, tokens, s.cols);
    for (int64_t act_block : kActBlocks) {
      auto act_error = [&](int64_t t, int64_t col) {
        const int64_t b0 = col / act_block * act_block;
        float amax = 0;
        for (int64_t k = b0; k < b0 + act_block; ++k) amax = std::max(amax, std::fabs(x[t * s.cols + k]));
        return amax / (2.0 * kActQmax);
      };
      test_fixtures::expect_within_rounding_bound(
          c.rw, x, tokens, run(Isa::Scalar, w, quantize(x, tokens, s.cols, act_block), nullptr, 0), act_error,
          name(s) + " act block " + std::to_string(act_block));
    }
  }
}

// A head on the interleaved kernel, refined from restored rows: on heads
// with near-ties planted among spread-out logits, every row's argmax is the
// two-pass argmax of the stored weight (the lane kernels at two passes),
// with its bits, and every output holds the interleaved one-pass bits or
// the two-pass ones.
TEST(InterleavedLinear, RefinedHeadArgmaxIsTheTwoPassArgmax) {
  std::mt19937 rng(4243);
  for (const KernelLevel& level : supported_levels({Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon})) {
    const Isa isa = level.isa;
    int one_pass_misses = 0;
    for (const Shape& s : {Shape{WeightFormat::Blk8, 512, 192, 32, 0, Values::Wide},
                           Shape{WeightFormat::Blk4, 512, 192, 32, kBlockOffsets, Values::Unsigned},
                           Shape{WeightFormat::Blk8, 500, 256, 16, kBlockSuper | kBlockOffsets, Values::Shifted},
                           Shape{WeightFormat::Blk6, 500, 256, 16, kBlockSuper, Values::Shifted}}) {
      for (int trial = 0; trial < 20; ++trial) {
        const int64_t n = s.rows, cols = s.cols, rows = 3;
        Case c(rng, s);
        const QLinearWeights q(c.rw.view);
        const InterleavedWeights w(c.rw.view);
        ASSERT_TRUE(InterleavedWeights::fits_refine_bound(c.rw.view));
        const std::vector<float> x = random_acts(rng, rows, cols);
        std::vector<float> bias(n);
        std::normal_distribution<float> spread(0.0f, 30.0f);
        for (float& b : bias) b = spread(rng);
        Int8Activations two;
        quantize_activations(Isa::Scalar, x.data(), rows, cols, q.layout(), 2, two);
        std::vector<float> y2(rows * n);
        qlinear(isa, q, two, bias.data(), 0, n, y2.data(), n);
        // Tie row 0's best two within 1e-3.
        const int64_t a = std::max_element(y2.begin(), y2.begin() + n) - y2.begin();
        int64_t b = a == 0 ? 1 : 0;
        for (int64_t m = 0; m < n; ++m)
          if (m != a && y2[m] > y2[b]) b = m;
        bias[b] += y2[a] - y2[b] + std::uniform_real_distribution<float>(-1e-3f, 1e-3f)(rng);
        qlinear(isa, q, two, bias.data(), 0, n, y2.data(), n);

        std::vector<float> y1(rows * n);
        interleaved_linear(isa, w, quantize(x, rows, cols), bias.data(), 0, w.groups(), y1.data(), n);
        std::vector<float> refined = y1;
        RefineScratch scratch;
        const RefineHead head = make_refine_head(q);
        refine_prepare(isa, q, head, x.data(), rows, 1, scratch);
        refine_scan_range(isa, q, head, refined.data(), n, rows, 0, n, scratch);
        for (int64_t t = 0; t < rows; ++t) {
          const int64_t blocks = refine_plan_row(isa, q, head, x.data(), refined.data(), n, t, scratch);
          refine_blocks_interleaved(isa, w, scratch, bias.data(), 0, blocks, refined.data() + t * n);
          const float* r = refined.data() + t * n;
          const int64_t top = std::max_element(r, r + n) - r, want = std::max_element(y2.begin() + t * n, y2.begin() + (t + 1) * n) - (y2.begin() + t * n);
          ASSERT_EQ(top, want) << name(s) << " " << level.name() << " trial " << trial << " row " << t;
          EXPECT_TRUE(same_bits({r[top]}, {y2[t * n + top]}));
          one_pass_misses += (std::max_element(y1.begin() + t * n, y1.begin() + (t + 1) * n) - (y1.begin() + t * n)) != want;
          for (int64_t m = 0; m < n; ++m)
            ASSERT_TRUE(same_bits({r[m]}, {y1[t * n + m]}) || same_bits({r[m]}, {y2[t * n + m]})) << "output " << m;
        }
      }
    }
    EXPECT_GT(one_pass_misses, 0) << "the planted ties should fool one pass at " << level.name();
  }
}

TEST(InterleavedLinear, RefusesActivationsItCannotRead) {
  std::mt19937 rng(6);
  Case c(rng, kShapes[0]);
  const InterleavedWeights w(c.rw.view);
  const std::vector<float> x = random_acts(rng, 1, 64);
  Int8Activations two;
  quantize_activations(Isa::Scalar, x.data(), 1, 64, ActLayout::Natural, 2, two);
  std::vector<float> y(16);
  EXPECT_THROW(interleaved_linear(Isa::Scalar, w, two, nullptr, 0, 1, y.data(), 16), Error);
}

}  // namespace
}  // namespace tessera::kernels

// int16 prefill GEMM: the row expansion gives w.value(); the AVX2 (with and
// without AVX-VNNI) and AVX-512 kernels give the scalar twin's bits for any
// shape, token count and row split; the twin is within the int16 rounding
// bound of the f32 reference on the same weight.
#include "kernels/qlinear_i16gemm.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/qlinear_test_util.h"

namespace tessera::kernels {
namespace {

using test_fixtures::call_split;
using test_fixtures::expect_within_rounding_bound;
using test_fixtures::LinearShape;
using test_fixtures::RandomCase;
using test_fixtures::same_bits;
using test_fixtures::AvxVnniScope;
using test_fixtures::KernelLevel;

// Rows off the 2-row tile (AVX2), the 2-pair tile (AVX-512) and the 32-row
// panel, odd row counts (a pair with one row), tokens off the 4-token (AVX2)
// and 6-token (AVX-512, AVX-VNNI) tiles with every remainder, columns ending
// on a 64-column block.
const LinearShape kShapes[] = {
    {WeightFormat::Lut4, 32, 64, 16, 16},  {WeightFormat::Lut4, 37, 576, 1, 33}, {WeightFormat::Lut4, 96, 640, 16, 7},
    {WeightFormat::Lut4, 9, 192, 3, 1},    {WeightFormat::Lut4, 65, 1536, 5, 18}, {WeightFormat::Int8, 13, 576, 0, 40},
    {WeightFormat::Int8, 40, 64, 0, 5},    {WeightFormat::Int8, 71, 896, 0, 22},  {WeightFormat::Lut3, 37, 576, 1, 9},
    {WeightFormat::Lut3, 24, 1536, 8, 4},  {WeightFormat::Lut2, 33, 640, 1, 6},   {WeightFormat::Lut2, 16, 64, 16, 1},
    {WeightFormat::Lut4, 32, 896, 16, 14},
};

Int16Activations quantized(Isa isa, const std::vector<float>& x, int64_t tokens, int64_t cols) {
  Int16Activations a;
  prepare_int16_activations(tokens, cols, a);
  quantize_int16_rows(isa, x.data(), 0, tokens, a);
  return a;
}

std::vector<float> run(Isa isa, const RandomCase& c, const Int16Activations& a, const LinearShape& s,
                       int64_t split) {
  std::vector<float> y(s.tokens * s.rows, NAN);
  call_split(s.rows, split,
             [&](int64_t b, int64_t e) { qlinear_i16gemm(isa, c.w, a, c.bias.data(), b, e, y.data(), s.rows); });
  return y;
}

TEST(Int16Activations, ScalarRowIsWithinHalfAStepAndTheAvx2RowHasItsBits) {
  std::mt19937 rng(30);
  for (int64_t cols : {64, 128, 576, 896, 1536}) {
    std::vector<float> x = test_fixtures::random_acts(rng, 6, cols);
    for (int64_t c = 0; c < cols; ++c) x[4 * cols + c] *= 1e-38f;  // 32767 / max overflows
    x[5 * cols + cols - 1] = NAN;
    const Int16Activations a = quantized(Isa::Scalar, x, 6, cols);
    for (int64_t t = 0; t < 6; ++t)
      for (int64_t c = 0; c < cols; ++c) {
        const float s = a.scale_row(t)[c / kI16Block];
        const int16_t q = a.q_row(t)[c];
        ASSERT_LE(std::abs(q), 32767);
        if (t == 4) {
          ASSERT_EQ(q, 0);
        }
        if (t == 5 && c >= (cols - 1) / kI16Block * kI16Block) {
          ASSERT_TRUE(std::isnan(s));
          ASSERT_EQ(q, 0);
        } else if (t != 4) {
          // Half a step, plus the f32 rounding of 32767 / max and of x · that
          // (a few thousandths of a step at |q| near 32767).
          ASSERT_LE(std::fabs(static_cast<double>(q) * s - x[t * cols + c]), 0.51 * s) << "row " << t << " column " << c;
        }
      }
    if (!isa_supported(Isa::Avx2)) continue;
    const Int16Activations v = quantized(Isa::Avx2, x, 6, cols);
    EXPECT_EQ(v.q, a.q) << cols;
    EXPECT_TRUE(same_bits(v.scale, a.scale)) << cols;
  }
}

#if TESSERA_X86
TEST(QLinearI16Gemm, RowExpansionGivesTheWeightValues) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs avx2";
  std::mt19937 rng(31);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    std::vector<int16_t> row(s.cols);
    for (int64_t n = 0; n < s.rows; ++n) {
      expand_row_i16_avx2(c.w, n, row.data());
      for (int64_t col = 0; col < s.cols; ++col)
        ASSERT_EQ(row[col], c.w.value(n, col)) << "row " << n << " column " << col;
    }
  }
}
#endif  // TESSERA_X86

class QLinearI16GemmLevels : public ::testing::TestWithParam<KernelLevel> {
 protected:
  void SetUp() override {
    const KernelLevel& l = GetParam();
    if (!isa_supported(l.isa)) GTEST_SKIP() << "needs " << isa_name(l.isa);
    if (l.avx_vnni && !avx_vnni_supported()) GTEST_SKIP() << "needs AVX-VNNI";
    vnni_.emplace(l);
  }
  void TearDown() override { vnni_.reset(); }

 private:
  std::optional<AvxVnniScope> vnni_;
};

TEST_P(QLinearI16GemmLevels, KernelGivesTheScalarTwinsBitsForAnySplit) {
  const Isa isa = GetParam().isa;
  std::mt19937 rng(32);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const Int16Activations a = quantized(isa, c.x, s.tokens, s.cols);
    const std::vector<float> twin = run(Isa::Scalar, c, a, s, 0);
    for (int64_t split : {int64_t{0}, int64_t{1}, s.rows / 2, s.rows - 3})
      EXPECT_TRUE(same_bits(run(isa, c, a, s, split), twin))
          << weight_format_name(s.format) << " [" << s.rows << ", " << s.cols << "] tokens " << s.tokens << " split "
          << split;
  }
}

TEST_P(QLinearI16GemmLevels, MismatchedActivationsAreRefused) {
  const Isa isa = GetParam().isa;
  std::mt19937 rng(34);
  const LinearShape s{WeightFormat::Int8, 16, 128, 0, 2};
  const RandomCase c(rng, s);
  const std::vector<float> narrow = test_fixtures::random_acts(rng, 2, 64);
  std::vector<float> y(32);
  EXPECT_THROW(qlinear_i16gemm(isa, c.w, quantized(isa, narrow, 2, 64), nullptr, 0, 16, y.data(), 16), Error);
}

INSTANTIATE_TEST_SUITE_P(Kernels, QLinearI16GemmLevels,
                         ::testing::Values(KernelLevel{Isa::Avx2, false}, KernelLevel{Isa::Avx2, true},
                                           KernelLevel{Isa::Avx512, false}),
                         [](const auto& info) {
                           std::string name = info.param.name();
                           std::replace(name.begin(), name.end(), '+', '_');
                           return name;
                         });

TEST(QLinearI16Gemm, ScalarTwinIsWithinRoundingOfTheReference) {
  std::mt19937 rng(33);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const Int16Activations a = quantized(Isa::Scalar, c.x, s.tokens, s.cols);
    std::vector<float> y(s.tokens * s.rows);
    qlinear_i16gemm_scalar(c.w, a, nullptr, 0, s.rows, y.data(), s.rows);
    expect_within_rounding_bound(
        c.rw, c.x, s.tokens, y, [&](int64_t t, int64_t col) { return 0.51 * a.scale_row(t)[col / kI16Block]; },
        std::string(weight_format_name(s.format)));
  }
}

}  // namespace
}  // namespace tessera::kernels

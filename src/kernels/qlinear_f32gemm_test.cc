// AVX2 f32 prefill GEMM: the row expansion gives w.value(); the kernel gives
// the scalar twin's bits for any shape, token count and row split; the twin
// is within f32 summation error of the f32 reference on the same weight
// (its activations are not rounded; only the palette's int8 grid is).
#include "kernels/qlinear_f32gemm.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/qlinear_test_util.h"

namespace tessera::kernels {
namespace {

using test_fixtures::call_split;
using test_fixtures::expect_within_rounding_bound;
using test_fixtures::LinearShape;
using test_fixtures::RandomCase;
using test_fixtures::same_bits;

// Rows off the 2-row tile and 32-row panel, tokens off the 4-token tile.
const LinearShape kShapes[] = {
    {WeightFormat::Lut4, 32, 64, 16, 16},  {WeightFormat::Lut4, 37, 576, 1, 33}, {WeightFormat::Lut4, 96, 640, 16, 7},
    {WeightFormat::Lut4, 9, 192, 3, 1},    {WeightFormat::Lut4, 65, 1536, 5, 18}, {WeightFormat::Int8, 13, 576, 0, 40},
    {WeightFormat::Int8, 40, 64, 0, 5},    {WeightFormat::Int8, 71, 896, 0, 22},  {WeightFormat::Lut3, 37, 576, 1, 9},
    {WeightFormat::Lut3, 24, 1536, 8, 4},  {WeightFormat::Lut2, 33, 640, 1, 6},   {WeightFormat::Lut2, 16, 64, 16, 1},
};

std::vector<float> run(bool avx2, const RandomCase& c, const LinearShape& s, int64_t split) {
  std::vector<float> y(s.tokens * s.rows, NAN);
  call_split(s.rows, split, [&](int64_t b, int64_t e) {
    if (avx2) qlinear_f32gemm_avx2(c.w, c.x.data(), s.tokens, c.bias.data(), b, e, y.data(), s.rows);
    else qlinear_f32gemm_scalar(c.w, c.x.data(), s.tokens, c.bias.data(), b, e, y.data(), s.rows);
  });
  return y;
}

TEST(QLinearF32Gemm, RowExpansionGivesTheWeightValues) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs avx2";
  std::mt19937 rng(31);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    std::vector<float> row(s.cols);
    for (int64_t n = 0; n < s.rows; ++n) {
      expand_row_f32_avx2(c.w, n, row.data());
      for (int64_t col = 0; col < s.cols; ++col)
        ASSERT_EQ(row[col], static_cast<float>(c.w.value(n, col))) << "row " << n << " column " << col;
    }
  }
}

TEST(QLinearF32Gemm, KernelGivesTheScalarTwinsBitsForAnySplit) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs avx2";
  std::mt19937 rng(32);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const std::vector<float> twin = run(false, c, s, 0);
    for (int64_t split : {int64_t{0}, int64_t{1}, s.rows / 2, s.rows - 3})
      EXPECT_TRUE(same_bits(run(true, c, s, split), twin))
          << weight_format_name(s.format) << " [" << s.rows << ", " << s.cols << "] tokens " << s.tokens << " split "
          << split;
  }
}

TEST(QLinearF32Gemm, ScalarTwinIsWithinSummationErrorOfTheReference) {
  std::mt19937 rng(33);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    std::vector<float> y(s.tokens * s.rows);
    qlinear_f32gemm_scalar(c.w, c.x.data(), s.tokens, nullptr, 0, s.rows, y.data(), s.rows);
    expect_within_rounding_bound(c.rw, c.x, s.tokens, y, [](int64_t, int64_t) { return 0.0; },
                                 std::string(weight_format_name(s.format)));
  }
}

}  // namespace
}  // namespace tessera::kernels

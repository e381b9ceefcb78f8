// float_linear: the AVX2 and AVX-512 kernels give ref::linear_any's bits on
// f32, f16 and bf16 weights, for column counts on and off the 16-lane chunk,
// row counts on and off the register tiles, 1 to 37 tokens, any row split
// and an output stride wider than the row count.
#include "kernels/float_linear.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.h"
#include "kernels/qlinear_test_util.h"
#include "kernels/reference/kernels.h"

namespace tessera::kernels {
namespace {

using test_fixtures::call_split;
using test_fixtures::random_acts;
using test_fixtures::same_bits;

struct Shape {
  int64_t rows, cols, tokens;
};
const Shape kShapes[] = {{1, 16, 1},  {4, 64, 1},   {7, 576, 1},  {9, 23, 3},    {13, 100, 4},
                         {16, 48, 5}, {33, 896, 7}, {5, 1, 2},    {21, 577, 37}, {8, 1536, 16}};

// A stored matrix with values spanning many binades, signed zeros and (for
// f16) subnormals, so the exact widening is exercised.
struct FloatWeight {
  std::vector<uint8_t> data;
  WeightView view;
  FloatWeight(std::mt19937& rng, WeightFormat f, int64_t rows, int64_t cols) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::uniform_int_distribution<int> e(-20, 4);
    const int64_t n = rows * cols;
    data.resize(static_cast<size_t>(n * (f == WeightFormat::F32 ? 4 : 2)));
    for (int64_t i = 0; i < n; ++i) {
      float v = std::ldexp(d(rng), e(rng));
      if (i % 53 == 0) v = -0.0f;
      if (f == WeightFormat::F32) reinterpret_cast<float*>(data.data())[i] = v;
      else if (f == WeightFormat::F16) reinterpret_cast<uint16_t*>(data.data())[i] = f32_to_f16(v);
      else reinterpret_cast<uint16_t*>(data.data())[i] = f32_to_bf16(v);
    }
    view.format = f;
    view.shape = {rows, cols};
    view.data = data.data();
  }
};

std::vector<float> run(Isa isa, const FloatWeight& w, const std::vector<float>& x, const Shape& s, const float* bias,
                       int64_t ldy, int64_t split) {
  std::vector<float> y(s.tokens * ldy, NAN);
  call_split(s.rows, split, [&](int64_t b, int64_t e) {
    float_linear(isa, w.view, x.data(), s.tokens, bias, b, e, y.data(), ldy);
  });
  return y;
}

TEST(FloatLinear, VectorKernelsGiveTheReferenceBits) {
  std::mt19937 rng(41);
  int levels = 0;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    ++levels;
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16})
      for (const Shape& s : kShapes) {
        const FloatWeight w(rng, f, s.rows, s.cols);
        const std::vector<float> x = random_acts(rng, s.tokens, s.cols);
        std::vector<float> bias(s.rows);
        for (float& b : bias) b = std::uniform_real_distribution<float>(-1, 1)(rng);
        for (const float* bp : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
          const int64_t ldy = s.rows + 3;
          const std::vector<float> want = run(Isa::Scalar, w, x, s, bp, ldy, 0);
          for (int64_t split : {int64_t{0}, int64_t{1}, s.rows / 2, s.rows - 3})
            EXPECT_TRUE(same_bits(run(isa, w, x, s, bp, ldy, split), want))
                << isa_name(isa) << " " << weight_format_name(f) << " [" << s.rows << ", " << s.cols << "] tokens "
                << s.tokens << " split " << split << (bp ? " bias" : "");
        }
      }
  }
  if (levels == 0) GTEST_SKIP() << "needs avx2";
}

TEST(FloatLinear, ScalarLevelIsTheReference) {
  std::mt19937 rng(42);
  const Shape s{6, 40, 3};
  const FloatWeight w(rng, WeightFormat::F16, s.rows, s.cols);
  const std::vector<float> x = random_acts(rng, s.tokens, s.cols);
  std::vector<float> want(s.tokens * s.rows);
  ref::linear_any(x.data(), s.tokens, s.cols, w.view, nullptr, s.rows, 0, s.rows, want.data());
  EXPECT_TRUE(same_bits(run(Isa::Scalar, w, x, s, nullptr, s.rows, 0), want));
}

TEST(FloatLinear, SupportsUnquantizedMatricesOnly) {
  std::mt19937 rng(43);
  FloatWeight w(rng, WeightFormat::BF16, 2, 16);
  EXPECT_TRUE(float_linear_supported(w.view));
  w.view.shape = {32};
  EXPECT_FALSE(float_linear_supported(w.view));
  w.view.shape = {2, 16};
  w.view.format = WeightFormat::Int8;
  EXPECT_FALSE(float_linear_supported(w.view));
}

}  // namespace
}  // namespace tessera::kernels

// float_gemm: every vector level gives its scalar twin's bits (one FMA
// chain per output in column order) for odd shapes, token counts and thread
// counts; the twin is the plain sum within rounding.
#include "kernels/float_gemm.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tessera::kernels {
namespace {

std::vector<float> random_values(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

TEST(FloatGemm, EveryLevelGivesTheScalarTwinsBits) {
  std::mt19937 rng(42);
  ThreadPool pool(2);
  struct Shape {
    int64_t rows, cols, tokens;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{7, 300, 5}, Shape{33, 257, 13}, Shape{64, 512, 48},
                        Shape{17, 1000, 61}, Shape{40, 31, 7}}) {
    const auto w = random_values(rng, s.rows * s.cols), x = random_values(rng, s.tokens * s.cols),
               bias = random_values(rng, s.rows);
    const int64_t ldy = s.rows + 3;
    std::vector<float> want(static_cast<size_t>(s.tokens * ldy), 0.0f);
    float_gemm(Isa::Scalar, w.data(), s.rows, s.cols, x.data(), s.tokens, bias.data(), want.data(), ldy, nullptr);
    // The twin against a plain double sum.
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t n = 0; n < s.rows; ++n) {
        double sum = bias[static_cast<size_t>(n)];
        for (int64_t k = 0; k < s.cols; ++k) sum += double(x[static_cast<size_t>(t * s.cols + k)]) * w[static_cast<size_t>(n * s.cols + k)];
        EXPECT_NEAR(want[static_cast<size_t>(t * ldy + n)], sum, 1e-5 * (1 + std::sqrt(double(s.cols))));
      }
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon}) {
      if (!isa_supported(isa)) continue;
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> got(want.size(), 0.0f);
        float_gemm(isa, w.data(), s.rows, s.cols, x.data(), s.tokens, bias.data(), got.data(), ldy, p);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " rows " << s.rows << " cols " << s.cols << " tokens "
                                     << s.tokens << " at " << i;
      }
    }
    // No bias.
    std::vector<float> plain(want.size()), plain_scalar(want.size());
    float_gemm(active_isa(), w.data(), s.rows, s.cols, x.data(), s.tokens, nullptr, plain.data(), ldy, &pool);
    float_gemm(Isa::Scalar, w.data(), s.rows, s.cols, x.data(), s.tokens, nullptr, plain_scalar.data(), ldy, nullptr);
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t n = 0; n < s.rows; ++n)
        ASSERT_EQ(plain[static_cast<size_t>(t * ldy + n)], plain_scalar[static_cast<size_t>(t * ldy + n)]);
  }
}

}  // namespace
}  // namespace tessera::kernels

#include "kernels/qlinear_refine.h"

#include <random>

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
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    int one_pass_misses = 0;
    for (WeightFormat f : {WeightFormat::Int8, WeightFormat::Lut4}) {
      for (int trial = 0; trial < 40; ++trial) {
        const int64_t n = 512, cols = 192, rows = 3;
        RandomCase c(rng, {f, n, cols, 16, rows});
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
        const int64_t redone = refine_top_outputs(isa, c.w, c.x.data(), rows, c.bias.data(), refined.data(), n, scratch);
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

}  // namespace
}  // namespace tessera::kernels

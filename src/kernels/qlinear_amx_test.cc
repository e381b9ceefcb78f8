// AMX bf16 prefill GEMM: the tile kernel matches the scalar twin for any
// shape and token count (partial tiles, padding) and gives the same bits for
// any row split; the
// AVX512-BF16 activation packer gives the plain packer's bits; the twin
// stays within the bf16 rounding bound of the f32 reference.
#include "kernels/qlinear_amx.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/qlinear_test_util.h"
#include "kernels/reference/kernels.h"

namespace tessera::kernels {
namespace {

using test_fixtures::random_acts;
using test_fixtures::RandomWeight;
using test_fixtures::same_bits;
using test_fixtures::call_split;
using test_fixtures::LinearShape;
using test_fixtures::RandomCase;
using test_fixtures::expect_within_rounding_bound;

// Rows and tokens off the 16/32 tile grid on purpose.
const LinearShape kShapes[] = {
    {WeightFormat::Lut4, 32, 64, 16, 32},   {WeightFormat::Lut4, 37, 576, 1, 33}, {WeightFormat::Lut4, 96, 640, 16, 64},
    {WeightFormat::Lut4, 9, 192, 3, 1},     {WeightFormat::Lut4, 64, 1536, 64, 17}, {WeightFormat::Int8, 13, 576, 0, 40},
    {WeightFormat::Int8, 40, 64, 0, 5},     {WeightFormat::Int8, 71, 896, 0, 100},  {WeightFormat::Lut3, 37, 576, 1, 33},
    {WeightFormat::Lut3, 64, 1536, 16, 40}, {WeightFormat::Lut2, 33, 640, 1, 32},   {WeightFormat::Lut2, 48, 192, 16, 5},
};

std::vector<float> run(bool amx, const QLinearWeights& w, const Bf16Activations& a, const float* bias, int64_t split) {
  const int64_t n = w.rows();
  std::vector<float> y(a.rows * n, NAN);
  call_split(n, split, [&](int64_t b, int64_t e) {
    if (amx) qlinear_amx(w, a, bias, b, e, y.data(), n);
    else qlinear_bf16_scalar(w, a, bias, b, e, y.data(), n);
  });
  return y;
}

TEST(QLinearAmx, PackersGiveTheSameBitsAndTheDocumentedLayout) {
  if (!isa_supported(Isa::Amx)) GTEST_SKIP() << "needs amx";
  std::mt19937 rng(21);
  for (int64_t rows : {1, 16, 17, 33}) {
    const int64_t cols = 96;
    std::vector<float> x = random_acts(rng, rows, cols);
    x[0] = 1e-40f;  // a subnormal: flushed to zero by both
    x[1] = -0.0f;
    Bf16Activations plain, fast;
    pack_bf16_activations(Isa::Avx512, x.data(), rows, cols, plain);
    pack_bf16_activations(Isa::Amx, x.data(), rows, cols, fast);
    ASSERT_EQ(plain.blocks, (rows + 31) / 32 * 2);
    const size_t used = static_cast<size_t>(plain.blocks * cols / 2 * kTileTokens);
    ASSERT_TRUE(std::equal(plain.pairs.begin(), plain.pairs.begin() + used, fast.pairs.begin()));
    for (int64_t t = 0; t < plain.blocks * kTileTokens; ++t)
      for (int64_t c = 0; c < cols; ++c) {
        const uint16_t want = t < rows ? bf16_bits(x[t * cols + c]) : 0;
        ASSERT_EQ(plain.at(t, c), want) << "token " << t << " column " << c;
      }
    EXPECT_EQ(plain.at(0, 0), 0);
    EXPECT_EQ(plain.at(0, 1), 0x8000);
    // Packed block range by block range (the executor's thread split), into
    // a buffer left dirty by a larger call: the same bits.
    Bf16Activations split;
    pack_bf16_activations(Isa::Amx, random_acts(rng, 70, cols).data(), 70, cols, split);
    prepare_bf16_activations(rows, cols, split);
    const int64_t nb = bf16_data_blocks(rows);
    for (int64_t b = nb; b > 0; --b) pack_bf16_blocks(Isa::Amx, x.data(), b - 1, b, split);
    ASSERT_EQ(split.blocks, fast.blocks);
    ASSERT_TRUE(std::equal(fast.pairs.begin(), fast.pairs.begin() + used, split.pairs.begin()));
  }
}

// The tile unit's order of additions inside one TDPBF16PS is not specified
// (on this Sapphire Rapids no sequential or per-instruction order reproduces
// more than 223 of 256 elements' bits), so the kernel is held to the twin
// within the worst-case f32 summation error of both, 2·K·2^-24·Σ|w_q·x|·
// out_scale, which a wrong column, nibble, palette or token breaks by orders
// of magnitude; and to its own bits for any row split (thread count).
TEST(QLinearAmx, TileKernelMatchesTheScalarTwinAndIsSplitInvariant) {
  if (!isa_supported(Isa::Amx)) GTEST_SKIP() << "needs amx";
  std::mt19937 rng(22);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const QLinearWeights& w = c.w;
    const std::vector<float>& x = c.x;
    const std::vector<float>& bias = c.bias;
    Bf16Activations a;
    pack_bf16_activations(Isa::Amx, x.data(), s.tokens, s.cols, a);
    const std::vector<float> twin = run(false, w, a, bias.data(), 0);
    const std::vector<float> got = run(true, w, a, bias.data(), 0);
    for (int64_t n = 0; n < s.rows; ++n)
      for (int64_t t = 0; t < s.tokens; ++t) {
        double mag = 0;
        for (int64_t c = 0; c < s.cols; ++c) mag += std::fabs(bf16_to_f32(a.at(t, c)) * w.value(n, c));
        const double bound = 2.0 * s.cols * std::ldexp(mag * std::fabs(w.out_scale(n)), -24) + 1e-30;
        ASSERT_LE(std::fabs(got[t * s.rows + n] - twin[t * s.rows + n]), bound)
            << weight_format_name(s.format) << " [" << s.rows << ", " << s.cols << "] row " << n << " token " << t;
      }
    for (int64_t split : {int64_t{1}, s.rows / 2, s.rows - 3})
      EXPECT_TRUE(same_bits(run(true, w, a, bias.data(), split), got))
          << weight_format_name(s.format) << " [" << s.rows << ", " << s.cols << "] tokens " << s.tokens << " split "
          << split;
  }
}

// bf16 keeps 8 significant bits: each activation moves by at most 2^-8 of
// itself (half an ulp); palette entries move by half a step of the int8 grid as in the
// integer-dot kernels. So |y_twin − y_ref| ≤ Σ_c |w_c x_c|·2^-8 + Σ_c |x_c|·s_n·m_g/254
// plus f32 summation noise.
TEST(QLinearAmx, ScalarTwinIsWithinTheBf16RoundingBoundOfTheReference) {
  std::mt19937 rng(23);
  for (const LinearShape& s : kShapes) {
    const RandomCase c(rng, s);
    const RandomWeight& rw = c.rw;
    const QLinearWeights& w = c.w;
    const std::vector<float>& x = c.x;
    Bf16Activations a;
    pack_bf16_activations(Isa::Scalar, x.data(), s.tokens, s.cols, a);
    auto act_error = [&](int64_t t, int64_t c) { return std::fabs(x[t * s.cols + c]) / 256.0; };
    expect_within_rounding_bound(rw, x, s.tokens, run(false, w, a, nullptr, 0), act_error,
                                 std::string(weight_format_name(s.format)));
  }
}

TEST(QLinearAmx, MismatchedActivationsAreRefused) {
  if (!isa_supported(Isa::Amx)) GTEST_SKIP() << "needs amx";
  std::mt19937 rng(24);
  RandomWeight rw(rng, WeightFormat::Int8, 16, 128, 0);
  const QLinearWeights w(rw.view);
  const std::vector<float> x = random_acts(rng, 2, 64);
  Bf16Activations a;
  pack_bf16_activations(Isa::Amx, x.data(), 2, 64, a);
  std::vector<float> y(32);
  EXPECT_THROW(qlinear_amx(w, a, nullptr, 0, 16, y.data(), 16), Error);
}

}  // namespace
}  // namespace tessera::kernels

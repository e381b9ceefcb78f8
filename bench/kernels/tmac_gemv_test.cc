// The T-MAC probe kernel (tmac_gemv.h) against its plain twin: exact int32
// dot products for random codes, activations and shapes, 4 and 2 bits,
// including rows long enough to pass the int16 widening point (16 pairs of
// quads) and activations at the int8 extremes.
#include "tmac_gemv.h"

#include <gtest/gtest.h>

#include <random>

#include "kernels/cpu_isa.h"

namespace tessera::bench {
namespace {

template <int B>
void check_random_shapes(uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{16, 32}, {48, 576}, {32, 1024}, {16, 4864}}) {
    std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
    for (auto& c : codes) c = static_cast<uint8_t>(rng() % (1u << B));
    std::vector<int8_t> a(static_cast<size_t>(cols));
    for (auto& v : a) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    a[0] = -128;
    a[cols - 1] = 127;
    const TmacWeights<B> w(codes.data(), rows, cols);
    TmacTables t;
    build_tmac_tables(a.data(), cols, t);
    std::vector<int32_t> got(static_cast<size_t>(rows)), want(static_cast<size_t>(rows));
    tmac_gemv<B>(w, t, got.data());
    tmac_gemv_reference(codes.data(), rows, cols, B, a.data(), want.data());
    EXPECT_EQ(got, want) << rows << " x " << cols << ", " << B << " bits";
  }
}

TEST(TmacGemv, MatchesThePlainDotExactly) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512";
  check_random_shapes<4>(17);
  check_random_shapes<2>(18);
}

// Worst case for the int16 sums: every code all ones and every activation
// -128, so each table lookup is -512 and a lane adds 32 of them per 16 pairs.
TEST(TmacGemv, LargestSumsDoNotOverflow) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512";
  const int64_t rows = 16, cols = 4864;
  std::vector<uint8_t> codes(static_cast<size_t>(rows * cols), 15);
  std::vector<int8_t> a(static_cast<size_t>(cols), -128);
  const TmacWeights<4> w(codes.data(), rows, cols);
  TmacTables t;
  build_tmac_tables(a.data(), cols, t);
  std::vector<int32_t> got(static_cast<size_t>(rows));
  tmac_gemv<4>(w, t, got.data());
  for (int32_t v : got) EXPECT_EQ(v, -128 * 7 * cols);
}

}  // namespace
}  // namespace tessera::bench

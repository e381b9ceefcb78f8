// The in-register lane reductions give ref::reduce_lanes16's bits: the sums
// of random lanes whose additions round and cancel, and of lanes holding
// signed zeros, infinities and NaN.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized" inside the shuffles; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/lane_reduce.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "kernels/cpu_isa.h"
#include "kernels/reference/dot.h"

namespace tessera::kernels {
namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Eight rows of 16 lanes: magnitudes spread over 2^-20 .. 2^20 with both
// signs, so every tree step rounds and some cancel; `special` also puts
// ±0, ±inf and NaN in random lanes.
void fill_rows(std::mt19937& rng, bool special, float (&lanes)[8][16]) {
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-20, 20), coin(0, 1), pick(0, 9);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (auto& row : lanes)
    for (float& v : row) {
      v = std::ldexp(mantissa(rng), exponent(rng)) * (coin(rng) ? 1.0f : -1.0f);
      if (special && pick(rng) < 3) v = specials[pick(rng) % 5];
    }
}

// Both AVX-512 reductions of the eight rows: one row at a time, and together.
__attribute__((target("avx512f,avx512dq"))) void reduce_avx512(const float (&lanes)[8][16], float (&one)[8],
                                                               float (&together)[8]) {
  __m512 rows[8];
  for (int r = 0; r < 8; ++r) {
    rows[r] = _mm512_loadu_ps(lanes[r]);
    one[r] = reduce_lanes16_avx512(rows[r]);
  }
  _mm256_storeu_ps(together, reduce_lanes16x8_avx512(rows));
}

bool same_or_both_nan(float a, float b) { return same_bits(a, b) || (std::isnan(a) && std::isnan(b)); }

TEST(LaneReduce, EightRowsAtOnceGiveEachRowsTreeBits) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    float lanes[8][16];
    fill_rows(rng, trial % 4 == 3, lanes);
    float one[8], got[8];
    reduce_avx512(lanes, one, got);
    for (int r = 0; r < 8; ++r) {
      float copy[16];
      std::memcpy(copy, lanes[r], sizeof copy);
      const float want = ref::reduce_lanes16(copy);
      EXPECT_TRUE(same_or_both_nan(one[r], want)) << "trial " << trial << " row " << r;
      EXPECT_TRUE(same_or_both_nan(got[r], want)) << "trial " << trial << " row " << r << ": " << got[r] << " vs " << want;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels

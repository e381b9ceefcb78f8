#include "kernels/read_sum.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tessera::kernels {
namespace {

// Every level the CPU has sums to the scalar twin's value, for lengths that
// end inside and outside the vector loops.
TEST(ReadSum, EveryLevelMatchesTheScalarTwin) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> words(1000);
  for (auto& w : words) w = rng();
  for (int64_t n : {0, 1, 3, 15, 16, 17, 31, 32, 33, 100, 999, 1000}) {
    uint64_t expect = 0;
    for (int64_t i = 0; i < n; ++i) expect += words[i];
    ASSERT_EQ(read_sum_scalar(words.data(), n), expect) << n;
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon}) {
      if (!isa_supported(isa)) continue;
      EXPECT_EQ(read_sum(isa, words.data(), n), expect) << isa_name(isa) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels

#include "core/aligned_vector.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace tessera {
namespace {

bool on_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kCacheLineBytes == 0; }

// Small buffers come from malloc's heap and large ones (past its mmap
// threshold, 128 KiB by default) from their own mapping: both kinds start on
// a cache line, after growth too.
TEST(AlignedVector, StartsOnACacheLineAtEverySize) {
  std::vector<AlignedVector<int16_t>> keep;  // held, so later ones get fresh addresses
  for (std::size_t n : {1, 7, 33, 1000, 36'864, 65'536, 155'648, 1'000'000}) {
    keep.emplace_back(n);
    EXPECT_TRUE(on_line(keep.back().data())) << n;
    keep.back().resize(2 * n + 3);
    EXPECT_TRUE(on_line(keep.back().data())) << n;
  }
}

}  // namespace
}  // namespace tessera

// The one dot product every reference kernel uses, with a fixed summation
// order so that its result is the same bits on every machine, for every
// thread count and every way a sequence is split into chunks:
//
//   lane j (0..15) accumulates a[i]*b[i] for i ≡ j (mod 16), in increasing i;
//   the 16 lanes are then added as a balanced tree (pairs, then pairs of pairs).
//
// Multiplies and adds are separate roundings (the build uses -ffp-contract=off),
// so no FMA changes the bits. The 16 independent lanes let the compiler
// vectorize the loop at any width without reassociating anything.
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::ref {

// The sum of n partial sums (n a power of two) as a tree: lane j + j+n/2,
// then j + j+n/4, ..., j + j+1 (overwrites acc).
inline float reduce_lanes(float* acc, int n) {
  for (int width = n / 2; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] = acc[j] + acc[j + width];
  return acc[0];
}

inline float reduce_lanes16(float* acc) { return reduce_lanes(acc, 16); }

inline float dot(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += a[i + j] * b[i + j];
  return reduce_lanes16(acc);
}

// Attention's q·k: ref::dot's lanes and tree, but each lane accumulates with
// a fused multiply-add, acc[j] = fma(a[i], b[i], acc[j]) (one rounding per
// term instead of two). std::fma is exactly rounded on every machine, in
// hardware or not, so these are still the same bits everywhere; the vector
// kernels (kernels/vector_ops.cc) issue one FMA instruction per term where
// dot's order costs a multiply and an add.
inline float dot_fma(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] = std::fma(a[i + j], b[i + j], acc[j]);
  for (int j = 0; i + j < n; ++j) acc[j] = std::fma(a[i + j], b[i + j], acc[j]);
  return reduce_lanes16(acc);
}

}  // namespace tessera::ref

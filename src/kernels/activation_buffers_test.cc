// The activation buffers that the prefill and decode kernels read with 32-
// and 64-byte loads start on a cache line (core/aligned_vector.h).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/bf16_activations.h"
#include "kernels/int16_activations.h"
#include "kernels/int8_activations.h"

namespace tessera::kernels {
namespace {

bool on_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kCacheLineBytes == 0; }

TEST(ActivationBuffers, StartOnACacheLine) {
  Int16Activations a16;
  prepare_int16_activations(128, 896, a16);
  EXPECT_TRUE(on_line(a16.q.data()));
  Int8Activations a8;
  std::vector<float> x(3 * 576, 0.5f);
  quantize_activations(Isa::Scalar, x.data(), 3, 576, ActLayout::Natural, 2, a8);
  EXPECT_TRUE(on_line(a8.q.data()));
  EXPECT_TRUE(on_line(a8.scale16.data()));
  EXPECT_TRUE(on_line(a8.bias16.data()));
  Bf16Activations b16;
  prepare_bf16_activations(40, 576, b16);
  EXPECT_TRUE(on_line(b16.pairs.data()));
}

}  // namespace
}  // namespace tessera::kernels

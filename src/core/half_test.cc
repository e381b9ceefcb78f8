#include "core/half.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

namespace tessera {
namespace {

// Every one of the 65536 f16 bit patterns decodes and re-encodes to itself
// (NaNs compared as NaN, since the quiet bit may be set on the way back).
TEST(Half, F16RoundTripsEveryBitPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), h) << "bits " << h << " value " << f;
  }
}

TEST(Half, F16DecodesKnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
}

// Encoding matches round-to-nearest-even computed in double arithmetic.
TEST(Half, F16EncodeRoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mag(-30.0f, 17.0f);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::copysign(std::exp2(mag(rng)), (i & 1) ? 1.0f : -1.0f);
    const uint16_t h = f32_to_f16(f);
    const double got = f16_to_f32(h);
    // The neighbours of the result must not be strictly closer.
    const double up = f16_to_f32(static_cast<uint16_t>(h + 1));
    const double err = std::fabs(got - f);
    if (!std::isinf(got)) {
      EXPECT_LE(err, std::fabs(up - f)) << f;
      if ((h & 0x7fff) != 0) {
        const double down = f16_to_f32(static_cast<uint16_t>(h - 1));
        EXPECT_LE(err, std::fabs(down - f)) << f;
        if (err == std::fabs(down - f) || err == std::fabs(up - f)) {
          EXPECT_EQ(h & 1, 0) << f;
        }
      }
    }
  }
}

TEST(Half, Bf16RoundTripAndRounding) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), h);
    }
  }
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);  // exact tie 1 + 2^-8 -> even (1.0)
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // tie 1 + 3*2^-8 -> even (1 + 2^-6)
}

}  // namespace
}  // namespace tessera

// IEEE binary16 (f16) and bfloat16 (bf16) <-> binary32 conversions.
// Decoding is exact (every f16/bf16 value is representable in f32, subnormals
// and NaN payloads included). Encoding rounds to nearest, ties to even.
#pragma once

#include <bit>
#include <cstdint>

namespace tessera {

inline float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {  // inf / NaN: keep the payload
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal: value = mant * 2^-24, normalise it
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (a >= 0x38800000u) {                        // normal f16 range
    uint32_t r = a - (112u << 23);               // rebias
    r += 0xfffu + ((r >> 13) & 1u);              // round to nearest even
    return sign | static_cast<uint16_t>(r >> 13);
  }
  // Subnormal or zero: scale by 2^24 in integer arithmetic with RNE.
  const int exp = static_cast<int>(a >> 23);
  if (exp < 102) return sign;  // below half the smallest subnormal
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const int shift = 126 - exp;  // 14..24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return sign | static_cast<uint16_t>(q);
}

}  // namespace tessera

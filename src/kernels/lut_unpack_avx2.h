// Unpacking lut3 / lut2 indices into looked-up int8 weights, AVX2.
//
// 32 columns take 4·B bytes of a row's little-endian bit string
// (bundle/weight_format.h). Without byte-granular shifts the indices go
// through 16-bit words:
//   1. the 4·B bytes are loaded exactly and copied to both 128-bit lanes;
//   2. vpshufb builds one word per column from the byte holding the low bit
//      of its index and, when the index crosses into the next byte, that
//      byte (else zero): word lanes hold columns 0-7 | 16-23 and 8-15 | 24-31;
//   3. vpmullw by 2^(8 - s), s the index's bit offset in its byte, moves the
//      index to bit 8 (the bits above it leave the word);
//   4. the words' high bytes are packed into bytes (vpsrlw + vpackuswb; the
//      lane split of step 2 makes that column order), masked to 4 bits;
//   5. vpshufb looks them up in the row's table, whose 16-byte lanes repeat
//      the 2^B entries with period 2^B (QLinearWeights::table), so the stray
//      bits between B and 4 select the same entry.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#define TESSERA_LUT_AVX2 __attribute__((target("avx2")))

namespace tessera::kernels {

namespace lut_unpack_detail {

// Column of word w (0-7) in 128-bit lane L of word vector k (0, 1).
constexpr int word_column(int k, int L, int w) { return 16 * L + 8 * k + w; }

// Step 2's byte indices for word vector k.
template <int B>
constexpr std::array<uint8_t, 32> word_bytes(int k) {
  std::array<uint8_t, 32> idx{};
  for (int L = 0; L < 2; ++L)
    for (int w = 0; w < 8; ++w) {
      const int bit = B * word_column(k, L, w), s = bit % 8;
      idx[16 * L + 2 * w] = static_cast<uint8_t>(bit / 8);
      idx[16 * L + 2 * w + 1] = s + B > 8 ? static_cast<uint8_t>(bit / 8 + 1) : uint8_t{0x80};
    }
  return idx;
}

// Step 3's multipliers for word vector k.
template <int B>
constexpr std::array<uint16_t, 16> word_multipliers(int k) {
  std::array<uint16_t, 16> mul{};
  for (int L = 0; L < 2; ++L)
    for (int w = 0; w < 8; ++w) mul[8 * L + w] = static_cast<uint16_t>(1u << (8 - (B * word_column(k, L, w)) % 8));
  return mul;
}

template <int B>
alignas(32) inline constexpr std::array<uint8_t, 32> kWordBytes0 = word_bytes<B>(0);
template <int B>
alignas(32) inline constexpr std::array<uint8_t, 32> kWordBytes1 = word_bytes<B>(1);
template <int B>
alignas(32) inline constexpr std::array<uint16_t, 16> kWordMul0 = word_multipliers<B>(0);
template <int B>
alignas(32) inline constexpr std::array<uint16_t, 16> kWordMul1 = word_multipliers<B>(1);

}  // namespace lut_unpack_detail

// The table bytes of the 32 columns whose indices start at p (4·B bytes,
// exactly those read). table: 32 bytes, both lanes of the row's table.
template <int B>
TESSERA_LUT_AVX2 inline __m256i unpack_lut32(const uint8_t* p, __m256i table) {
  static_assert(B == 2 || B == 3, "lut2 or lut3");
  namespace d = lut_unpack_detail;
  __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));  // 8 bytes
  if constexpr (B == 3) {
    int32_t last;
    std::memcpy(&last, p + 8, 4);
    bytes = _mm_insert_epi32(bytes, last, 2);
  }
  const __m256i src = _mm256_broadcastsi128_si256(bytes);
  const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(d::kWordBytes0<B>.data()));
  const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(d::kWordBytes1<B>.data()));
  const __m256i m0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(d::kWordMul0<B>.data()));
  const __m256i m1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(d::kWordMul1<B>.data()));
  const __m256i w0 = _mm256_mullo_epi16(_mm256_shuffle_epi8(src, b0), m0);
  const __m256i w1 = _mm256_mullo_epi16(_mm256_shuffle_epi8(src, b1), m1);
  const __m256i idx = _mm256_and_si256(_mm256_packus_epi16(_mm256_srli_epi16(w0, 8), _mm256_srli_epi16(w1, 8)),
                                       _mm256_set1_epi8(0x0f));
  return _mm256_shuffle_epi8(table, idx);
}

}  // namespace tessera::kernels

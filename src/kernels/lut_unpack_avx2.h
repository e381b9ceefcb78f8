// Unpacking lut3 / lut2 indices into looked-up int8 weights, AVX2.
//
// 32 columns take 4·B bytes of a row's little-endian bit string
// (core/weight_format.h). Without byte-granular shifts the indices go
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

// Step 2's byte indices for one word vector: word w of 128-bit lane L holds
// column column(L, w) of the 32 (64 for halves) whose bits were loaded.
template <int B, class Column>
constexpr std::array<uint8_t, 32> word_bytes(Column column) {
  std::array<uint8_t, 32> idx{};
  for (int L = 0; L < 2; ++L)
    for (int w = 0; w < 8; ++w) {
      const int bit = B * column(L, w), s = bit % 8;
      idx[16 * L + 2 * w] = static_cast<uint8_t>(bit / 8);
      idx[16 * L + 2 * w + 1] = s + B > 8 ? static_cast<uint8_t>(bit / 8 + 1) : uint8_t{0x80};
    }
  return idx;
}

// Step 3's multipliers for the same word vector.
template <int B, class Column>
constexpr std::array<uint16_t, 16> word_multipliers(Column column) {
  std::array<uint16_t, 16> mul{};
  for (int L = 0; L < 2; ++L)
    for (int w = 0; w < 8; ++w) mul[8 * L + w] = static_cast<uint16_t>(1u << (8 - (B * column(L, w)) % 8));
  return mul;
}

// unpack_lut32: word vector k's lane L holds columns 16·L + 8·k + w.
constexpr auto natural_columns(int k) {
  return [k](int L, int w) { return 16 * L + 8 * k + w; };
}

template <int B>
alignas(32) inline constexpr std::array<uint8_t, 32> kWordBytes0 = word_bytes<B>(natural_columns(0));
template <int B>
alignas(32) inline constexpr std::array<uint8_t, 32> kWordBytes1 = word_bytes<B>(natural_columns(1));
template <int B>
alignas(32) inline constexpr std::array<uint16_t, 16> kWordMul0 = word_multipliers<B>(natural_columns(0));
template <int B>
alignas(32) inline constexpr std::array<uint16_t, 16> kWordMul1 = word_multipliers<B>(natural_columns(1));

// unpack_lut64_halves: each 128-bit lane reads its own 32 columns (4
// blocks); word w of word vector v holds the lane's column
// 8·β + 4·half + w % 4 with β = w / 4 + 2·(v % 2) and half = v / 2, so
// vectors 0, 1 pack into the first halves and 2, 3 into the second.
constexpr auto halves_columns(int v) {
  return [v](int, int w) { return 8 * (w / 4 + 2 * (v % 2)) + 4 * (v / 2) + w % 4; };
}

template <int B>
struct HalvesTables {
  alignas(32) std::array<uint8_t, 32> bytes[4] = {word_bytes<B>(halves_columns(0)), word_bytes<B>(halves_columns(1)),
                                                  word_bytes<B>(halves_columns(2)), word_bytes<B>(halves_columns(3))};
  alignas(32) std::array<uint16_t, 16> mul[4] = {
      word_multipliers<B>(halves_columns(0)), word_multipliers<B>(halves_columns(1)),
      word_multipliers<B>(halves_columns(2)), word_multipliers<B>(halves_columns(3))};
};

template <int B>
inline constexpr HalvesTables<B> kHalves{};

// Exactly n (8 or 12) bytes at p into the low bytes of a vector.
TESSERA_LUT_AVX2 inline __m128i load_exact(const uint8_t* p, int n) {
  __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  if (n == 12) {
    int32_t last;
    std::memcpy(&last, p + 8, 4);
    v = _mm_insert_epi32(v, last, 2);
  }
  return v;
}

}  // namespace lut_unpack_detail

// The table bytes of the 32 columns whose indices start at p (4·B bytes,
// exactly those read). table: 32 bytes, both lanes of the row's table.
template <int B>
TESSERA_LUT_AVX2 inline __m256i unpack_lut32(const uint8_t* p, __m256i table) {
  static_assert(B == 2 || B == 3, "lut2 or lut3");
  namespace d = lut_unpack_detail;
  const __m256i src = _mm256_broadcastsi128_si256(d::load_exact(p, 4 * B));
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

// 64 columns (8 blocks) as 32 bytes of each BlockHalves vector
// (kernels/int8_activations.h): first's dword j holds block j's columns 0-3,
// second's its columns 4-7. Lane L reads blocks 4L..4L+3 (4·B bytes, exactly).
template <int B>
TESSERA_LUT_AVX2 inline void unpack_lut64_halves(const uint8_t* p, __m256i table, __m256i& first, __m256i& second) {
  static_assert(B == 2 || B == 3, "lut2 or lut3");
  namespace d = lut_unpack_detail;
  const __m256i src = _mm256_set_m128i(d::load_exact(p + 4 * B, 4 * B), d::load_exact(p, 4 * B));
  __m256i hi[4];
  for (int v = 0; v < 4; ++v) {
    const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(d::kHalves<B>.bytes[v].data()));
    const __m256i mul = _mm256_load_si256(reinterpret_cast<const __m256i*>(d::kHalves<B>.mul[v].data()));
    hi[v] = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(src, idx), mul), 8);
  }
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  first = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_packus_epi16(hi[0], hi[1]), low4));
  second = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_packus_epi16(hi[2], hi[3]), low4));
}

}  // namespace tessera::kernels

// Unpacking lut3 / lut2 indices into looked-up weight bytes, AVX-512 (VBMI).
//
// A row's indices are one little-endian bit string, `B` bits per column
// (core/weight_format.h), so the 8 columns of one activation block take
// exactly B bytes and 64 columns 8·B bytes. Three byte shuffles turn those
// into the 64 columns' table bytes, in column order:
//   1. vpermb puts block q's B bytes at the bottom of qword q (the qword's
//      other bytes are don't-care);
//   2. vpmultishiftqb sets byte i of every qword to bits [B·i, B·i + 8) of
//      that qword: column 8q + i's index in the low B bits, stray bits above;
//   3. vpermb looks every byte up in the row's 64-byte table, which repeats
//      its 2^B entries with period 2^B (QLinearWeights::table), so the stray
//      bits among the 6 that vpermb reads select the same entry.
// The table decides what the bytes mean: the signed int8 weights, or those
// biased by +128 for an unsigned × signed dot product (vpdpbusd).
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>

#define TESSERA_LUT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi")))

namespace tessera::kernels {

namespace lut_unpack_detail {

// vpermb indices that give qword q the source bytes from Bytes·q on (B bytes:
// one block, unpack_lut64; 2·B: two blocks, unpack_lut128_halves).
template <int Bytes>
constexpr std::array<uint8_t, 64> spread_indices() {
  std::array<uint8_t, 64> idx{};
  for (int q = 0; q < 8; ++q)
    for (int i = 0; i < 8; ++i) idx[8 * q + i] = static_cast<uint8_t>(Bytes * q + i);
  return idx;
}

template <int B>
alignas(64) inline constexpr std::array<uint8_t, 64> kSpread = spread_indices<B>();
template <int B>
alignas(64) inline constexpr std::array<uint8_t, 64> kPairSpread = spread_indices<2 * B>();

// A vpmultishiftqb control: byte i of each qword starts at bit bit_of(i).
template <class BitOf>
constexpr long long multishift_control(BitOf bit_of) {
  unsigned long long c = 0;
  for (int i = 0; i < 8; ++i) c |= static_cast<unsigned long long>(bit_of(i)) << (8 * i);
  return static_cast<long long>(c);
}

// unpack_lut64: byte i is the qword's block's column i.
template <int B>
constexpr long long kColumns = multishift_control([](int i) { return B * i; });

// unpack_lut128_halves: the qword holds blocks 2q and 2q+1; byte i < 4 of
// the first vector is block 2q's column i (bit B·i), byte 4 + i block 2q+1's
// (bit 8·B + B·i); the second vector takes the same four columns 4 later.
template <int B>
constexpr long long kHalf0 = multishift_control([](int i) { return (i < 4 ? 0 : 8 * B) + B * (i % 4); });
template <int B>
constexpr long long kHalf1 = multishift_control([](int i) { return (i < 4 ? 0 : 8 * B) + B * (4 + i % 4); });

}  // namespace lut_unpack_detail

// The table bytes of the 64 columns whose indices start at p (8·B bytes,
// read with a masked load: nothing past them is touched).
template <int B>
TESSERA_LUT_AVX512 inline __m512i unpack_lut64(const uint8_t* p, __m512i table) {
  static_assert(B == 2 || B == 3, "lut2 or lut3");
  const __mmask32 bytes = static_cast<__mmask32>((1ull << (8 * B)) - 1);
  const __m512i src = _mm512_zextsi256_si512(_mm256_maskz_loadu_epi8(bytes, p));
  const __m512i spread = _mm512_permutexvar_epi8(_mm512_load_si512(lut_unpack_detail::kSpread<B>.data()), src);
  const __m512i fields =
      _mm512_multishift_epi64_epi8(_mm512_set1_epi64(lut_unpack_detail::kColumns<B>), spread);
  return _mm512_permutexvar_epi8(fields, table);
}

// 128 columns (16 blocks of 8) as the two vectors of the BlockHalves
// activation layout (kernels/int8_activations.h): first's dword j holds
// block j's columns 0-3, second's its columns 4-7. `bytes` masks the
// 16·B index bytes to read (8·B for a row's last 64 columns: the blocks past
// them come out as don't-care bytes, which meet zero activations).
template <int B>
TESSERA_LUT_AVX512 inline void unpack_lut128_halves(const uint8_t* p, __mmask64 bytes, __m512i table, __m512i& first,
                                                    __m512i& second) {
  static_assert(B == 2 || B == 3, "lut2 or lut3");
  namespace d = lut_unpack_detail;
  const __m512i src = _mm512_maskz_loadu_epi8(bytes, p);
  const __m512i spread = _mm512_permutexvar_epi8(_mm512_load_si512(d::kPairSpread<B>.data()), src);
  first = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(_mm512_set1_epi64(d::kHalf0<B>), spread), table);
  second = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(_mm512_set1_epi64(d::kHalf1<B>), spread), table);
}

}  // namespace tessera::kernels

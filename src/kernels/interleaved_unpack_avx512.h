// The interleaved layout's 8-column groups as two vectors of unsigned bytes
// u (kernels/interleaved_linear.h), and a block's 16 row values, with
// AVX-512: shared by the vpdpbusd kernel (interleaved_linear_avx512.cc)
// and the AMX one (interleaved_linear_amx.cc), which stores the pairs as
// the rows of a B tile. Include only from files compiled for AVX-512.
#pragma once

#include <immintrin.h>

#include "kernels/interleaved_linear.h"
#include "kernels/interleaved_walk.h"

#define TESSERA_AVX512_UNPACK __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c")))

namespace tessera::kernels::avx512 {

// The 16 rows' values of a block: f32, f16, or int8 factors (p) times f16
// super-block multipliers (m), the product exact.
template <class Fm>
TESSERA_AVX512_UNPACK inline __m512 load16(const uint8_t* p, const uint8_t* m) {
  if constexpr (Fm::Super)
    return _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(m))),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
  else if constexpr (Fm::F32) return _mm512_load_ps(reinterpret_cast<const float*>(p));
  else return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// nib | (the high bits of one half of a group's nibbles, moved from the
// plane to bit 4): a shift and one vpternlogd (A | (B & C), imm 0xF8).
template <int HB>
TESSERA_AVX512_UNPACK inline __m512i with_plane_bits(__m512i nib, __m512i plane, int shift) {
  const __m512i moved = shift >= 0 ? _mm512_slli_epi16(plane, static_cast<unsigned>(shift))
                                   : _mm512_srli_epi16(plane, static_cast<unsigned>(-shift));
  return _mm512_ternarylogic_epi32(nib, moved, _mm512_set1_epi8(static_cast<char>(((1 << HB) - 1) << 4)), 0xF8);
}

// Group k of a row group's stream wd: w0 = u of columns 8k..8k+3 and w1 =
// u of 8k+4..8k+7, byte 4r+i of each for row r (8 bits: two loads; 4 bits:
// one load, the nibbles masked apart and, unless the codes are the values,
// looked up in `table` with vpshufb; 5 / 6 bits: each nibble or-ed with its
// high bits from the unit's plane vector).
template <class Fm>
TESSERA_AVX512_UNPACK inline void unpack_group(const __m512i* wd, int64_t k, __m512i table, __m512i& w0,
                                               __m512i& w1) {
  if constexpr (Fm::B4) {
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const __m512i v = _mm512_load_si512(wd + Fm::nibble_vector(k));
    w0 = _mm512_and_si512(v, nibble);
    w1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
    if constexpr (Fm::HB > 0) {
      const __m512i plane = _mm512_load_si512(wd + Fm::plane_vector(k));
      w0 = with_plane_bits<Fm::HB>(w0, plane, Fm::plane_shift(k, 0));
      w1 = with_plane_bits<Fm::HB>(w1, plane, Fm::plane_shift(k, 1));
    }
    if constexpr (Fm::Lookup) {
      w0 = _mm512_shuffle_epi8(table, w0);
      w1 = _mm512_shuffle_epi8(table, w1);
    }
  } else {
    w0 = _mm512_load_si512(wd + 2 * k);
    w1 = _mm512_load_si512(wd + 2 * k + 1);
  }
}

}  // namespace tessera::kernels::avx512

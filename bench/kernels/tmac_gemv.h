// A T-MAC-style GEMV (activation tables over bit-serial weights), measured
// against the shipped in-register palette kernels (kernels/qlinear_avx512.cc)
// by tessera_kernel_bench (`run_tmac`). Issue 6 asks for both routes to be
// measured; this one is not shipped (docs/REJECTED_APPROACHES.md has the
// numbers and why).
//
// The route (Wei et al., "T-MAC", 2024): a weight of B bits is the sum of its
// bit planes, w = Σ_k 2^k · bit_k(q) − 2^(B−1) (uniform codes q in [0, 2^B)).
// For each group of 4 columns, the 16 possible sums of the group's int8
// activations, T_g[m] = Σ_{i<4} bit_i(m) · a[4g+i] (|T| ≤ 512: int16, exact),
// are built once per token; a row's plane-k bits of the group (one nibble)
// then select its partial dot product by table lookup instead of multiplying:
//
//   Σ_c a_c · w_c = Σ_k 2^k Σ_g T_g[nibble_k(row, g)] − 2^(B−1) · Σ_c a_c.
//
// AVX-512BW, exact int32 results. vpshufb looks up 64 bytes at once from four
// 16-byte tables, one per 128-bit lane, so lane L holds group 4u+L's table
// (u: the quad of groups, 16 columns) and its 16 index bytes are 16 rows'
// nibbles of that group: one lookup serves 16 rows × 4 groups. The int16
// table is split into a low (u8) and a high (s8) byte table; unpacking the
// two lookups' bytes interleaved gives the int16 values exactly, added in
// int16 per plane (at most 1024 per lane per pair of quads), widened to int32
// every 16 pairs of quads. Packed weights: per block of 16 rows, per pair of
// quads, per plane, 64 bytes; byte 16L + j holds row j's nibble of group
// 4(2p)+L (low) and of group 4(2p+1)+L (high).
//
// One activation scale per token (the route's most favourable case: a block
// scale per few columns, as the shipped kernels keep for accuracy, would
// cost a multiply per group).
#pragma once

// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized" inside casts and extracts; they are don't-care inputs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/aligned_vector.h"

namespace tessera::bench {

#define TESSERA_TMAC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

// Uniform B-bit weights [rows][cols] (codes in [0, 2^B)) packed for the
// kernel; rows % 16 == 0, cols % 32 == 0.
template <int B>
struct TmacWeights {
  int64_t rows = 0, cols = 0;
  AlignedVector<uint8_t> packed;  // [rows / 16][cols / 32][B][64]

  TmacWeights(const uint8_t* codes, int64_t rows_, int64_t cols_) : rows(rows_), cols(cols_) {
    const int64_t pairs = cols / 32;
    packed.assign(static_cast<size_t>(rows / 16 * pairs * B * 64), 0);
    auto nibble = [&](int64_t r, int64_t g, int k) {
      int n = 0;
      for (int i = 0; i < 4; ++i) n |= ((codes[r * cols + 4 * g + i] >> k) & 1) << i;
      return n;
    };
    for (int64_t rb = 0; rb < rows / 16; ++rb)
      for (int64_t p = 0; p < pairs; ++p)
        for (int k = 0; k < B; ++k) {
          uint8_t* out = packed.data() + ((rb * pairs + p) * B + k) * 64;
          for (int L = 0; L < 4; ++L)
            for (int j = 0; j < 16; ++j) {
              const int64_t r = 16 * rb + j;
              out[16 * L + j] =
                  static_cast<uint8_t>(nibble(r, 4 * (2 * p) + L, k) | nibble(r, 4 * (2 * p + 1) + L, k) << 4);
            }
        }
  }
};

// One token's tables: per quad u, 64 low bytes then 64 high bytes.
struct TmacTables {
  AlignedVector<uint8_t> bytes;  // [cols / 16][2][64]
  int32_t act_sum = 0;           // Σ a_c
};

inline void build_tmac_tables(const int8_t* a, int64_t cols, TmacTables& t) {
  t.bytes.resize(static_cast<size_t>(cols / 16 * 128));
  int32_t sum = 0;
  for (int64_t g = 0; g < cols / 4; ++g) {
    int16_t table[16];
    table[0] = 0;
    for (int m = 1; m < 16; ++m) table[m] = static_cast<int16_t>(table[m & (m - 1)] + a[4 * g + __builtin_ctz(m)]);
    uint8_t* lo = t.bytes.data() + (g / 4) * 128 + (g % 4) * 16;
    for (int m = 0; m < 16; ++m) {
      lo[m] = static_cast<uint8_t>(table[m] & 0xff);
      lo[64 + m] = static_cast<uint8_t>((table[m] >> 8) & 0xff);
    }
    for (int i = 0; i < 4; ++i) sum += a[4 * g + i];
  }
  t.act_sum = sum;
}

// out[r] = Σ_c a_c · (q[r][c] − 2^(B−1)), exact, for every row.
template <int B>
TESSERA_TMAC_AVX512 void tmac_gemv(const TmacWeights<B>& w, const TmacTables& t, int32_t* out) {
  const int64_t pairs = w.cols / 32;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int64_t rb = 0; rb < w.rows / 16; ++rb) {
    const uint8_t* wp = w.packed.data() + rb * pairs * B * 64;
    __m256i total[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // rows 0-7, 8-15 (int32)
    for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
      __m512i acc[B][2];
      for (int k = 0; k < B; ++k) acc[k][0] = acc[k][1] = _mm512_setzero_si512();
      const int64_t p1 = p0 + 16 < pairs ? p0 + 16 : pairs;
      for (int64_t p = p0; p < p1; ++p) {
        const uint8_t* tb = t.bytes.data() + 2 * p * 128;
        const __m512i lo0 = _mm512_load_si512(tb), hi0 = _mm512_load_si512(tb + 64);
        const __m512i lo1 = _mm512_load_si512(tb + 128), hi1 = _mm512_load_si512(tb + 192);
#pragma GCC unroll 4
        for (int k = 0; k < B; ++k) {
          // Streamed weights: each line prefetched 4 KB ahead (rows past
          // the block's end are the next block's, contiguous).
          _mm_prefetch(reinterpret_cast<const char*>(wp + (p * B + k) * 64 + 4096), _MM_HINT_T0);
          const __m512i v = _mm512_load_si512(wp + (p * B + k) * 64);
          const __m512i i0 = _mm512_and_si512(v, low4);
          const __m512i i1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
          const __m512i l0 = _mm512_shuffle_epi8(lo0, i0), h0 = _mm512_shuffle_epi8(hi0, i0);
          const __m512i l1 = _mm512_shuffle_epi8(lo1, i1), h1 = _mm512_shuffle_epi8(hi1, i1);
          acc[k][0] = _mm512_add_epi16(acc[k][0], _mm512_add_epi16(_mm512_unpacklo_epi8(l0, h0), _mm512_unpacklo_epi8(l1, h1)));
          acc[k][1] = _mm512_add_epi16(acc[k][1], _mm512_add_epi16(_mm512_unpackhi_epi8(l0, h0), _mm512_unpackhi_epi8(l1, h1)));
        }
      }
      // Widen: lane L of acc[k][h] holds rows 8h .. 8h+7 summed over groups ≡ L (mod 4).
      for (int h = 0; h < 2; ++h) {
        __m512i s = _mm512_setzero_si512();
        for (int k = 0; k < B; ++k) {
          const __m512i wide = _mm512_add_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(acc[k][h])),
                                                _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(acc[k][h], 1)));
          s = _mm512_add_epi32(s, _mm512_slli_epi32(wide, k));
        }
        total[h] = _mm256_add_epi32(total[h], _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1)));
      }
    }
    const __m256i offset = _mm256_set1_epi32(t.act_sum << (B - 1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16 * rb), _mm256_sub_epi32(total[0], offset));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16 * rb + 8), _mm256_sub_epi32(total[1], offset));
  }
}

// The plain twin: the same sums, one product at a time.
inline void tmac_gemv_reference(const uint8_t* codes, int64_t rows, int64_t cols, int bits, const int8_t* a,
                                int32_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    int32_t s = 0;
    for (int64_t c = 0; c < cols; ++c) s += a[c] * (static_cast<int32_t>(codes[r * cols + c]) - (1 << (bits - 1)));
    out[r] = s;
  }
}

}  // namespace tessera::bench

#pragma GCC diagnostic pop

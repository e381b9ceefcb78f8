// AVX2 twin of quantize_act_row_scalar (kernels/int8_activations.h): the
// same bits, one 8-column block per vector.
//
// Per block: |x|, its maximum broadcast by three swap-and-max steps, then
// exactly the scalar arithmetic in IEEE single precision (inv = qmax / max,
// q = round-to-nearest-even(x · inv) by vcvtps2dq, s = max / qmax, residual =
// x − s·q with a separate multiply and subtract); all-zero blocks get s = 0
// and q = 0. Rows with a NaN or an infinity, and rows whose qmax / max
// overflows (a subnormal max, where the scalar row keeps the low byte of the
// "integer indefinite" and saturating packs would not), are left to the
// scalar row. A scale per 32 columns (Natural layout only) has its own
// row below. Lane sums of q come from vpmaddubsw against ones (pairs of
// bytes) and vpmaddwd (pairs of those): 4 bytes per 32-bit lane, and one
// vphaddd more for the 8 columns of a Lut4Pairs / BlockHalves lane. The
// pairs layout gathers even and odd bytes with vpshufb + vpermq, the halves
// layout each block's two dwords with vpermd.
#include <immintrin.h>

#include <cmath>

#include "kernels/int8_activations.h"

#define TESSERA_AVX2 __attribute__((target("avx2")))

namespace tessera::kernels {

namespace {

// Four 32-bit lane sums of each run of 4 bytes of v (signed), i.e. 8 sums.
TESSERA_AVX2 inline __m256i sums_of_4(__m256i v) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v), _mm256_set1_epi16(1));
}

// Columns c0 .. c0 + 7 of a row of `cols` (those past its end read as 0);
// live: the lanes inside the row.
TESSERA_AVX2 inline __m256 load_live(const float* xr, int64_t cols, int64_t c0, __m256i& live) {
  const int64_t left = std::min<int64_t>(std::max<int64_t>(cols - c0, 0), 8);
  live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_maskload_ps(xr + std::min(c0, cols), live);  // an empty mask reads nothing
}

// Whether any lane of |x| is a NaN or an infinity.
TESSERA_AVX2 inline __m256 not_finite(__m256 a) { return _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_NLT_UQ); }

// A block's inv = qmax / max and s = max / qmax in every lane, from its
// lanes' max|x| (finite): the scalar row's divisions; all-zero blocks get
// 0 for both. False for a max so small that qmax / max overflows.
TESSERA_AVX2 inline bool block_scale(__m256 mx, __m256 kq, __m256& inv, __m256& s) {
  mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
  mx = _mm256_max_ps(mx, _mm256_permute_ps(mx, _MM_SHUFFLE(1, 0, 3, 2)));
  mx = _mm256_max_ps(mx, _mm256_permute_ps(mx, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m256 nonzero = _mm256_cmp_ps(mx, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  inv = _mm256_and_ps(_mm256_div_ps(kq, mx), nonzero);
  if (_mm256_movemask_ps(_mm256_cmp_ps(inv, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ)) != 0) return false;
  s = _mm256_and_ps(_mm256_div_ps(mx, kq), nonzero);
  return true;
}

// A scale per 32 columns (kActBlockCoarse), Natural layout: per block four
// vectors, their max|x| reduced across all 8 lanes, then the arithmetic
// above. The four vectors' int32 q go to bytes by two saturating packs
// (exact) and one vpermd that undoes the packs' lane interleave; each of
// the block's 8 lanes holds its scale.
TESSERA_AVX2 bool quantize_row_coarse(const float* xr, int64_t cols, int64_t chunks, int qmax, int8_t* qr, float* sr,
                                      int32_t* br, float* residual) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 kq = _mm256_set1_ps(static_cast<float>(qmax));
  // After packs_epi32(q0, q1), packs_epi32(q2, q3) and packs_epi16 of the
  // two, dword i holds columns 4·order[i]..+3.
  const __m256i unpack_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t m = 0; m < chunks; ++m) {
    for (int h = 0; h < 2; ++h) {
      const int64_t b0 = m * 64 + 32 * h;
      __m256 x[4];
      __m256i live[4];
      __m256 mx = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
      for (int k = 0; k < 4; ++k) {
        x[k] = load_live(xr, cols, b0 + 8 * k, live[k]);
        const __m256 a = _mm256_andnot_ps(sign, x[k]);
        bad = _mm256_or_ps(bad, not_finite(a));  // vmaxps drops a NaN in its first operand: test each vector
        mx = _mm256_max_ps(mx, a);
      }
      if (_mm256_movemask_ps(bad) != 0) return false;  // NaN or ±inf
      __m256 inv, s;
      if (!block_scale(mx, kq, inv, s)) return false;  // subnormal max
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(x[k], inv));  // |q| <= qmax
        if (residual)
          _mm256_maskstore_ps(residual + std::min(b0 + 8 * k, cols), live[k],
                              _mm256_sub_ps(x[k], _mm256_mul_ps(s, _mm256_cvtepi32_ps(q[k]))));
      }
      const __m256i v = _mm256_permutevar8x32_epi32(
          _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])), unpack_order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + b0), v);
      _mm256_storeu_ps(sr + m * 16 + 8 * h, s);
      // -128 · Σq per 4 columns, exactly.
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(br + m * 16 + 8 * h),
                          _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums_of_4(v), 7)));
    }
  }
  return true;
}

}  // namespace

TESSERA_AVX2 bool quantize_act_row_avx2(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax,
                                        int8_t* qr, float* sr, int32_t* br, float* residual, int64_t block_cols) {
  if (block_cols != kActBlock) {
    if (layout != ActLayout::Natural || block_cols != kActBlockCoarse) return false;
    return quantize_row_coarse(xr, cols, chunks, qmax, qr, sr, br, residual);
  }
  const bool block_lanes = layout != ActLayout::Natural;  // 128-column chunks, a block per lane
  const bool halves = layout == ActLayout::BlockHalves;
  // BlockHalves: each 8-byte block's first dword, then its second.
  const __m256i halves_order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const int64_t cc = act_chunk_cols(layout);
  const int blocks = static_cast<int>(cc / kActBlock);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 kq = _mm256_set1_ps(static_cast<float>(qmax));
  const __m256i first_dwords = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
  // Per 128-bit lane: the 8 even bytes, then the 8 odd ones.
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,  //
                                         0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  alignas(32) int8_t natural[128];
  for (int64_t m = 0; m < chunks; ++m) {
    for (int b = 0; b < blocks; ++b) {
      const int64_t c0 = m * cc + b * kActBlock;
      __m256i live;
      const __m256 x = load_live(xr, cols, c0, live);
      const int64_t left = std::min<int64_t>(std::max<int64_t>(cols - c0, 0), kActBlock);
      const __m256 a = _mm256_andnot_ps(sign, x);
      if (_mm256_movemask_ps(not_finite(a)) != 0) return false;  // NaN or ±inf
      __m256 inv, s;
      if (!block_scale(a, kq, inv, s)) return false;  // subnormal max
      const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(x, inv));  // |q| <= qmax
      // int32 -> int8: saturating packs (exact here) leave the block's bytes
      // as dwords 0 and 4; gather them into the low 8 bytes.
      const __m256i q16 = _mm256_packs_epi32(q, q);
      const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16, q16), first_dwords);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(natural + b * kActBlock), _mm256_castsi256_si128(q8));
      if (residual && left > 0)
        _mm256_maskstore_ps(residual + c0, live, _mm256_sub_ps(x, _mm256_mul_ps(s, _mm256_cvtepi32_ps(q))));
      const float scale = _mm256_cvtss_f32(s);
      if (block_lanes) {
        sr[m * 16 + b] = scale;
      } else {
        sr[m * 16 + 2 * b] = scale;
        sr[m * 16 + 2 * b + 1] = scale;
      }
    }
    __m256i lo_sums, hi_sums;  // lanes 0-7, 8-15
    if (block_lanes) {
      // natural 32 bytes at a time -> 16 bytes of the first vector, 16 of the
      // second (even / odd columns, or block halves); 8-column sums.
      __m256i parts[4], s4[4];
      for (int i = 0; i < 4; ++i) {
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(natural + 32 * i));
        parts[i] = halves ? _mm256_permutevar8x32_epi32(v, halves_order)
                          : _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, split), _MM_SHUFFLE(3, 1, 2, 0));
        s4[i] = sums_of_4(v);
      }
      int8_t* dst = qr + m * 128;
      for (int i = 0; i < 4; ++i) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * i), _mm256_castsi256_si128(parts[i]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 64 + 16 * i), _mm256_extracti128_si256(parts[i], 1));
      }
      lo_sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(s4[0], s4[1]), _MM_SHUFFLE(3, 1, 2, 0));
      hi_sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(s4[2], s4[3]), _MM_SHUFFLE(3, 1, 2, 0));
    } else {
      const __m256i v0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(natural));
      const __m256i v1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(natural + 32));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + m * 64), v0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + m * 64 + 32), v1);
      lo_sums = sums_of_4(v0);
      hi_sums = sums_of_4(v1);
    }
    // -128 · Σq, exactly (|Σq| <= 8 · 127).
    const __m256i z = _mm256_setzero_si256();
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(br + m * 16), _mm256_sub_epi32(z, _mm256_slli_epi32(lo_sums, 7)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(br + m * 16 + 8), _mm256_sub_epi32(z, _mm256_slli_epi32(hi_sums, 7)));
  }
  return true;
}

}  // namespace tessera::kernels

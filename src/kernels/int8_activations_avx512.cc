// AVX-512 twin of quantize_act_row_scalar (kernels/int8_activations.h): the
// same bits, 16 columns (two 8-column blocks) per vector.
//
// Per vector: |x|, each 8-lane half's maximum by three swap-and-max steps
// (128-bit halves, 64-bit pairs, neighbours) so every lane holds its block's
// max|x|; then exactly the scalar arithmetic in IEEE single precision:
// inv = 127 / max, q = round-to-nearest-even(x · inv) (vcvtps2dq under the
// default rounding mode, as lrint), s = max / 127, residual = x − s·q (a
// multiply and a subtract: the build does not contract them). All-zero blocks
// get s = 0 and q = 0. A row with a NaN or an infinity is left to the scalar
// row, whose per-block handling of them is the reference.
// Layout: Natural chunks are the 64 q bytes in column order; Lut4Pairs
// chunks split even and odd columns, BlockHalves each block's halves, with
// two vpermt2b. Each lane's Σq (4 bytes per 32-bit lane, 8 for the 128-column
// layouts) comes from vpdpbusd against
// a vector of ones; the scales of lane j's block are gathered by
// compressing the lanes that start blocks.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>

#include "kernels/int8_activations.h"

#define TESSERA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

namespace tessera::kernels {

namespace {

// Byte indices of vpermt2b over (natural[0..63], natural[64..127]) giving a
// 128-column layout's two vectors: Lut4Pairs the even columns, then the odd
// ones; BlockHalves each block's first 4 columns, then its last 4. Built
// once, not per row.
struct SplitIndex {
  alignas(64) uint8_t first[64], second[64];
  constexpr explicit SplitIndex(bool pairs) : first{}, second{} {
    for (int i = 0; i < 64; ++i) {
      first[i] = static_cast<uint8_t>(pairs ? 2 * i : 8 * (i / 4) + i % 4);
      second[i] = static_cast<uint8_t>(pairs ? 2 * i + 1 : 8 * (i / 4) + 4 + i % 4);
    }
  }
};
constexpr SplitIndex kPairIndex(true), kHalvesIndex(false);

}  // namespace

namespace {

// A scale per 32 columns (kActBlockCoarse), Natural layout: per block two
// vectors, their max|x| reduced across all 16 lanes (four swap-and-max
// steps), then the arithmetic above; each of the block's 8 lanes holds its
// scale.
TESSERA_AVX512 bool quantize_row_coarse(const float* xr, int64_t cols, int64_t chunks, int8_t* qr, float* sr,
                                        int32_t* br, float* residual) {
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const __m512 k127 = _mm512_set1_ps(127.0f);
  const __m512 zero = _mm512_setzero_ps();
  const __m512i ones = _mm512_set1_epi8(1);
  auto live = [&](int64_t c0) {
    const int64_t left = cols - c0;
    return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : static_cast<__mmask16>((1u << left) - 1);
  };
  for (int64_t m = 0; m < chunks; ++m) {
    alignas(64) int8_t natural[64];
    for (int h = 0; h < 2; ++h) {
      const int64_t c0 = m * 64 + 32 * h;
      const __mmask16 l0 = live(c0), l1 = live(c0 + 16);
      const __m512 x0 = _mm512_maskz_loadu_ps(l0, xr + c0), x1 = _mm512_maskz_loadu_ps(l1, xr + c0 + 16);
      const __m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
      // NaN or ±inf; each vector on its own, since vmaxps drops a NaN in its first operand.
      if ((_mm512_cmp_ps_mask(a0, inf, _CMP_NLT_UQ) | _mm512_cmp_ps_mask(a1, inf, _CMP_NLT_UQ)) != 0) return false;
      __m512 mx = _mm512_max_ps(a0, a1);
      mx = _mm512_max_ps(mx, _mm512_shuffle_f32x4(mx, mx, _MM_SHUFFLE(2, 3, 0, 1)));
      mx = _mm512_max_ps(mx, _mm512_shuffle_f32x4(mx, mx, _MM_SHUFFLE(1, 0, 3, 2)));
      mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, _MM_SHUFFLE(1, 0, 3, 2)));
      mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, _MM_SHUFFLE(2, 3, 0, 1)));
      const __mmask16 nonzero = _mm512_cmp_ps_mask(mx, zero, _CMP_NEQ_OQ);
      const __m512 inv = _mm512_maskz_div_ps(nonzero, k127, mx);
      const __m512 s = _mm512_maskz_div_ps(nonzero, mx, k127);
      const __m512 xs[2] = {x0, x1};
      const __mmask16 ls[2] = {l0, l1};
      for (int k = 0; k < 2; ++k) {
        const __m128i q8 = _mm512_cvtepi32_epi8(_mm512_maskz_cvtps_epi32(nonzero, _mm512_mul_ps(xs[k], inv)));
        _mm_store_si128(reinterpret_cast<__m128i*>(natural + 32 * h + 16 * k), q8);
        if (residual)
          _mm512_mask_storeu_ps(residual + c0 + 16 * k, ls[k],
                                _mm512_sub_ps(xs[k], _mm512_mul_ps(s, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)))));
      }
      _mm256_storeu_ps(sr + m * 16 + 8 * h, _mm512_castps512_ps256(s));
    }
    const __m512i v = _mm512_load_si512(natural);
    _mm512_storeu_si512(qr + m * 64, v);
    const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, v);
    _mm512_storeu_si512(br + m * 16, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7)));
  }
  return true;
}

}  // namespace

TESSERA_AVX512 bool quantize_act_row_avx512(const float* xr, int64_t cols, ActLayout layout, int64_t chunks,
                                            int8_t* qr, float* sr, int32_t* br, float* residual, int64_t block_cols) {
  if (block_cols != kActBlock) {
    if (layout != ActLayout::Natural || block_cols != kActBlockCoarse) return false;
    return quantize_row_coarse(xr, cols, chunks, qr, sr, br, residual);
  }
  const bool block_lanes = layout != ActLayout::Natural;  // 128-column chunks, a block per lane
  const SplitIndex& split = layout == ActLayout::Lut4Pairs ? kPairIndex : kHalvesIndex;
  const int64_t cc = act_chunk_cols(layout);
  const int vectors = static_cast<int>(cc / 16);
  const __m512 inf = _mm512_set1_ps(INFINITY);
  const __m512 k127 = _mm512_set1_ps(127.0f);
  const __m512 zero = _mm512_setzero_ps();
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i first_idx = _mm512_load_si512(split.first), second_idx = _mm512_load_si512(split.second);
  alignas(64) int8_t natural[128];
  for (int64_t m = 0; m < chunks; ++m) {
    for (int k = 0; k < vectors; ++k) {
      const int64_t c0 = m * cc + 16 * k;
      const int64_t left = cols - c0;
      const __mmask16 live =
          left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : static_cast<__mmask16>((1u << left) - 1);
      const __m512 x = _mm512_maskz_loadu_ps(live, xr + c0);
      const __m512 a = _mm512_abs_ps(x);
      if (_mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ) != 0) return false;  // NaN or ±inf
      __m512 mx = _mm512_max_ps(a, _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(2, 3, 0, 1)));
      mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, _MM_SHUFFLE(1, 0, 3, 2)));
      mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, _MM_SHUFFLE(2, 3, 0, 1)));
      const __mmask16 nonzero = _mm512_cmp_ps_mask(mx, zero, _CMP_NEQ_OQ);
      const __m512 inv = _mm512_maskz_div_ps(nonzero, k127, mx);
      const __m512 s = _mm512_maskz_div_ps(nonzero, mx, k127);
      // The low byte, as the scalar row's cast to int8 keeps it (the same
      // value whenever x · inv is finite; with a subnormal max, 127 / max
      // overflows and both keep the low byte of the "integer indefinite").
      const __m128i q8 = _mm512_cvtepi32_epi8(_mm512_maskz_cvtps_epi32(nonzero, _mm512_mul_ps(x, inv)));
      _mm_store_si128(reinterpret_cast<__m128i*>(natural + 16 * k), q8);
      if (residual)
        _mm512_mask_storeu_ps(residual + c0, live,
                              _mm512_sub_ps(x, _mm512_mul_ps(s, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)))));
      // Lane j's block scale: 128-column layouts' lanes are whole blocks (lanes 0 and 8
      // start this vector's two); natural lanes are half blocks (0, 1, 8, 9).
      // Compressed in a register, then stored: vcompressps straight to memory
      // is microcoded on Zen 4 and took ~40% of this function there.
      if (block_lanes) {
        _mm_storel_pi(reinterpret_cast<__m64*>(sr + m * 16 + 2 * k),
                      _mm512_castps512_ps128(_mm512_maskz_compress_ps(0x0101, s)));
      } else {
        _mm_storeu_ps(sr + m * 16 + 4 * k, _mm512_castps512_ps128(_mm512_maskz_compress_ps(0x0303, s)));
      }
    }
    __m512i sums;
    if (block_lanes) {
      const __m512i lo = _mm512_load_si512(natural), hi = _mm512_load_si512(natural + 64);
      const __m512i first = _mm512_permutex2var_epi8(lo, first_idx, hi);
      const __m512i second = _mm512_permutex2var_epi8(lo, second_idx, hi);
      _mm512_storeu_si512(qr + m * 128, first);
      _mm512_storeu_si512(qr + m * 128 + 64, second);
      sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, first), ones, second);
    } else {
      const __m512i v = _mm512_load_si512(natural);
      _mm512_storeu_si512(qr + m * 64, v);
      sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, v);
    }
    // -128 · Σq, exactly (|Σq| <= 8 · 127).
    _mm512_storeu_si512(br + m * 16, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7)));
  }
  return true;
}

}  // namespace tessera::kernels

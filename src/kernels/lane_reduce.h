// ref::reduce_lanes16 in registers (kernels/reference/dot.h): the sum of 16
// f32 lanes as lane j + j+8, then j + j+4, j + j+2, j + j+1 — the same
// additions in the same order, so the same bits as storing the lanes and
// reducing them in scalar code, without the store and 15 scalar adds.
// Lanes 0-7 and 8-15 are one zmm, or two ymm (lo, hi).
#pragma once

#include <immintrin.h>

namespace tessera::kernels {

// Lanes 0-3 plus 4-7 of h8 (lanes j + j+8 already added), then the rest of the
// tree; on its own, ref::reduce_lanes(lanes, 8) (the int16 GEMM's reduce8).
__attribute__((target("avx2"))) inline float reduce_lanes8_added(__m256 h8) {
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_movehdup_ps(h2)));
}

__attribute__((target("avx2"))) inline float reduce_lanes16_avx2(__m256 lo, __m256 hi) {
  return reduce_lanes8_added(_mm256_add_ps(lo, hi));
}

__attribute__((target("avx512f,avx512dq"))) inline float reduce_lanes16_avx512(__m512 v) {
  return reduce_lanes8_added(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// Eight rows' reduce_lanes16_avx512 at once: lane r of the result is the sum
// of rows[r]'s 16 lanes through the same additions of the same operands
// (lane j + j+8, then j + j+4, j + j+2, j + j+1). Instead of halving one row
// at a time, each step shuffles two vectors' halves side by side and adds
// them, so one add serves two rows, then four, then eight: 17 shuffles and 8
// adds for the eight rows instead of 32 and 32.
__attribute__((target("avx512f,avx512dq"))) inline __m256 reduce_lanes16x8_avx512(const __m512 (&rows)[8]) {
  // j + j+8: 128-bit chunks [a0 a1 b0 b1] + [a2 a3 b2 b3] give a's 8 sums, then b's.
  __m512 h8[4];
  for (int i = 0; i < 4; ++i)
    h8[i] = _mm512_add_ps(_mm512_shuffle_f32x4(rows[2 * i], rows[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_f32x4(rows[2 * i], rows[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // j + j+4: [a0 b0 c0 d0] + [a1 b1 c1 d1] (chunk k: row k's 4 sums, rows 0-3; then 4-7).
  __m512 h4[2];
  for (int i = 0; i < 2; ++i)
    h4[i] = _mm512_add_ps(_mm512_shuffle_f32x4(h8[2 * i], h8[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_f32x4(h8[2 * i], h8[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  // j + j+2 within each chunk: chunk k = [row k: 0+2, 1+3, row 4+k: 0+2, 1+3].
  const __m512 h2 = _mm512_add_ps(_mm512_shuffle_ps(h4[0], h4[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(h4[0], h4[1], _MM_SHUFFLE(3, 2, 3, 2)));
  // j + j+1: chunk k = [row k, row 4+k, row k, row 4+k].
  const __m512 h1 = _mm512_add_ps(_mm512_shuffle_ps(h2, h2, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_ps(h2, h2, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_castps512_ps256(
      _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), h1));
}

}  // namespace tessera::kernels

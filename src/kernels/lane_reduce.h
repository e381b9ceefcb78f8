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

}  // namespace tessera::kernels

// The AVX2 int16 activation quantizer: the scalar row's bits
// (kernels/int16_activations.h), 16 columns per step.
#include <immintrin.h>

#include <cmath>

#include "kernels/int16_activations.h"

#define TESSERA_AVX2 __attribute__((target("avx2,fma")))

namespace tessera::kernels {

TESSERA_AVX2 bool quantize_int16_row_avx2(const float* xr, int64_t cols, int16_t* qr, float* sr) {
  if (cols % 64 != 0) return false;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(INFINITY);
  for (int64_t c0 = 0, b = 0; c0 < cols; c0 += kI16Block, ++b) {
    const int64_t n = std::min<int64_t>(kI16Block, cols - c0);
    __m256 vmax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int64_t c = c0; c < c0 + n; c += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xr + c), abs_mask);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // inf or NaN
      vmax = _mm256_max_ps(vmax, a);
    }
    if (!_mm256_testz_ps(bad, bad)) return false;
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    const float inv = 32767.0f / amax;
    if (amax != 0.0f && !std::isfinite(inv)) return false;
    if (amax == 0.0f) {
      sr[b] = 0.0f;
      for (int64_t c = c0; c < c0 + n; c += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + c), _mm256_setzero_si256());
      continue;
    }
    sr[b] = amax / 32767.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (int64_t c = c0; c < c0 + n; c += 16) {
      const __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + c), vinv));
      const __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xr + c + 8), vinv));
      // packs works per 128-bit half: (lo0 hi0 lo1 hi1) → column order.
      const __m256i q = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + c), q);
    }
  }
  return true;
}

}  // namespace tessera::kernels

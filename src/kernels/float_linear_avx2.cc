// AVX2 float_linear (kernels/float_linear.h): the 16 lanes are two ymm
// (lanes 0-7 and 8-15); f16 widens through vcvtph2ps (F16C), bf16 through a
// zero-extend and a 16-bit shift. AVX2 has no masked 16-bit loads: the
// column tail is widened in scalar code into a zero-padded buffer and added
// under a blend.
#include <immintrin.h>

#include "core/half.h"
#include "kernels/float_linear.h"
#include "kernels/lane_reduce.h"

#define TESSERA_FLOAT_LINEAR_TARGET __attribute__((target("avx2,fma,f16c")))

namespace tessera::kernels {
namespace {

struct Lanes {
  struct V {
    __m256 lo, hi;
  };
  // acc[2][2] is 8 registers of the 16, leaving room for 2 rows' and 1 token's chunk.
  static constexpr int kRows = 2, kTokens = 2, kDecodeRows = 4;

  TESSERA_FLOAT_LINEAR_TARGET static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  TESSERA_FLOAT_LINEAR_TARGET static V load_x(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  TESSERA_FLOAT_LINEAR_TARGET static V load_x_tail(const float* p, int r) {
    alignas(32) float buf[16] = {};
    for (int i = 0; i < r; ++i) buf[i] = p[i];
    return load_x(buf);
  }
  template <WeightFormat F>
  TESSERA_FLOAT_LINEAR_TARGET static V load_w(const void* row, int64_t c) {
    if constexpr (F == WeightFormat::F32) return load_x(static_cast<const float*>(row) + c);
    const auto* p = reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + c);
    return {widen<F>(_mm_loadu_si128(p)), widen<F>(_mm_loadu_si128(p + 1))};
  }
  template <WeightFormat F>
  TESSERA_FLOAT_LINEAR_TARGET static V load_w_tail(const void* row, int64_t c, int r) {
    alignas(32) float buf[16] = {};
    for (int i = 0; i < r; ++i) {
      if constexpr (F == WeightFormat::F32) buf[i] = static_cast<const float*>(row)[c + i];
      else if constexpr (F == WeightFormat::F16) buf[i] = f16_to_f32(static_cast<const uint16_t*>(row)[c + i]);
      else buf[i] = bf16_to_f32(static_cast<const uint16_t*>(row)[c + i]);
    }
    return load_x(buf);
  }
  TESSERA_FLOAT_LINEAR_TARGET static V mul_add(V acc, V x, V w) {
    return {_mm256_add_ps(acc.lo, _mm256_mul_ps(x.lo, w.lo)), _mm256_add_ps(acc.hi, _mm256_mul_ps(x.hi, w.hi))};
  }
  TESSERA_FLOAT_LINEAR_TARGET static V mul_add_tail(V acc, V x, V w, int r) {
    const V sum = mul_add(acc, x, w);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 on_lo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(r), lane));
    const __m256 on_hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(r - 8), lane));
    return {_mm256_blendv_ps(acc.lo, sum.lo, on_lo), _mm256_blendv_ps(acc.hi, sum.hi, on_hi)};
  }
  TESSERA_FLOAT_LINEAR_TARGET static float reduce(V v) { return reduce_lanes16_avx2(v.lo, v.hi); }

 private:
  template <WeightFormat F>
  TESSERA_FLOAT_LINEAR_TARGET static __m256 widen(__m128i h) {
    if constexpr (F == WeightFormat::F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
};

}  // namespace
}  // namespace tessera::kernels

#include "kernels/float_linear_tiles.h"

namespace tessera::kernels {

void float_linear_avx2(const WeightView& w, const float* x, int64_t tokens, const float* bias, int64_t n_begin,
                       int64_t n_end, float* y, int64_t ldy) {
  float_linear_dispatch(w, x, tokens, bias, n_begin, n_end, y, ldy);
}

}  // namespace tessera::kernels

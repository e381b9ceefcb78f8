// AVX-512 float_linear (kernels/float_linear.h): the 16 lanes are one zmm;
// f16 widens through vcvtph2ps, bf16 through a zero-extend and a 16-bit
// shift; the column tail uses masked loads and a masked add.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized" inside extracts and masked loads; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "kernels/float_linear.h"
#include "kernels/lane_reduce.h"

#define TESSERA_FLOAT_LINEAR_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c")))

namespace tessera::kernels {
namespace {

struct Lanes {
  using V = __m512;
  static constexpr int kRows = 4, kTokens = 4, kDecodeRows = 4;

  TESSERA_FLOAT_LINEAR_TARGET static V zero() { return _mm512_setzero_ps(); }
  TESSERA_FLOAT_LINEAR_TARGET static V load_x(const float* p) { return _mm512_loadu_ps(p); }
  TESSERA_FLOAT_LINEAR_TARGET static V load_x_tail(const float* p, int r) {
    return _mm512_maskz_loadu_ps(mask(r), p);
  }
  template <WeightFormat F>
  TESSERA_FLOAT_LINEAR_TARGET static V load_w(const void* row, int64_t c) {
    if constexpr (F == WeightFormat::F32) return _mm512_loadu_ps(static_cast<const float*>(row) + c);
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(row) + c));
    return widen<F>(h);
  }
  template <WeightFormat F>
  TESSERA_FLOAT_LINEAR_TARGET static V load_w_tail(const void* row, int64_t c, int r) {
    if constexpr (F == WeightFormat::F32) return _mm512_maskz_loadu_ps(mask(r), static_cast<const float*>(row) + c);
    return widen<F>(_mm256_maskz_loadu_epi16(mask(r), static_cast<const uint16_t*>(row) + c));
  }
  TESSERA_FLOAT_LINEAR_TARGET static V mul_add(V acc, V x, V w) { return _mm512_add_ps(acc, _mm512_mul_ps(x, w)); }
  TESSERA_FLOAT_LINEAR_TARGET static V mul_add_tail(V acc, V x, V w, int r) {
    return _mm512_mask_add_ps(acc, mask(r), acc, _mm512_mul_ps(x, w));
  }
  TESSERA_FLOAT_LINEAR_TARGET static float reduce(V v) { return reduce_lanes16_avx512(v); }

 private:
  TESSERA_FLOAT_LINEAR_TARGET static __mmask16 mask(int r) { return static_cast<__mmask16>((1u << r) - 1); }
  template <WeightFormat F>
  TESSERA_FLOAT_LINEAR_TARGET static V widen(__m256i h) {
    if constexpr (F == WeightFormat::F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

}  // namespace
}  // namespace tessera::kernels

#include "kernels/float_linear_tiles.h"

namespace tessera::kernels {

void float_linear_avx512(const WeightView& w, const float* x, int64_t tokens, const float* bias, int64_t n_begin,
                         int64_t n_end, float* y, int64_t ldy) {
  float_linear_dispatch(w, x, tokens, bias, n_begin, n_end, y, ldy);
}

}  // namespace tessera::kernels

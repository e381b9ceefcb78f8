// AVX2 f32 prefill GEMM on stored lut4 / lut3 / lut2 / int8 weights; contract in
// kernels/qlinear_f32gemm.h.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/lut_unpack_avx2.h"
#include "kernels/qlinear_f32gemm.h"

#define TESSERA_AVX2 __attribute__((target("avx2,fma")))

namespace tessera::kernels {

namespace {

constexpr int64_t kPanelRows = 32;  // rows expanded at a time (≤ 32 · cols · 4 bytes, held in L2)
constexpr int kTileRows = 3, kTileTokens = 4;

// Sign-extends 16 int8 weights to floats at out[0..15].
TESSERA_AVX2 inline void store16(__m128i b, float* out) {
  _mm256_storeu_ps(out, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
  _mm256_storeu_ps(out + 8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))));
}

// reduce8 of kernels/qlinear_f32gemm.h (ref::reduce_lanes on 8 lanes) in registers.
TESSERA_AVX2 inline float reduce8(__m256 v) {
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_movehdup_ps(h2)));
}

// acc[r][t] over every column of rows p[r] (expanded, cols floats each)
// against tokens x[t]; R rows × T tokens of one tile.
template <int R, int T>
TESSERA_AVX2 void tile(const float* p, int64_t cols, const float* x, int64_t ldx, const QLinearWeights& w,
                       int64_t n, const float* bias, float* y, int64_t ldy) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < cols; c += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm256_loadu_ps(p + r * cols + c);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * ldx + c);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(xv, wv[r], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[t * ldy + n + r] = qlinear_output(reduce8(acc[r][t]), w.out_scale(n + r), bias, n + r);
}

template <int R>
TESSERA_AVX2 void tile_tokens(int64_t tokens_left, const float* p, int64_t cols, const float* x, int64_t ldx,
                              const QLinearWeights& w, int64_t n, const float* bias, float* y, int64_t ldy) {
  switch (std::min<int64_t>(tokens_left, kTileTokens)) {
    case 4: return tile<R, 4>(p, cols, x, ldx, w, n, bias, y, ldy);
    case 3: return tile<R, 3>(p, cols, x, ldx, w, n, bias, y, ldy);
    case 2: return tile<R, 2>(p, cols, x, ldx, w, n, bias, y, ldy);
    default: return tile<R, 1>(p, cols, x, ldx, w, n, bias, y, ldy);
  }
}

}  // namespace

TESSERA_AVX2 void expand_row_f32_avx2(const QLinearWeights& w, int64_t n, float* out) {
  const uint8_t* row = w.row(n);
  const int64_t cols = w.cols();
  if (w.format() == WeightFormat::Int8) {
    for (int64_t c = 0; c < cols; c += 16)
      store16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c)), out + c);
    return;
  }
  if (w.bits() == 3 || w.bits() == 2) {  // 32 columns per step (kernels/lut_unpack_avx2.h)
    const __m256i table = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.table(n)));
    for (int64_t c = 0; c < cols; c += 32) {
      const uint8_t* p = row + c / 8 * w.bits();
      const __m256i v = w.bits() == 3 ? unpack_lut32<3>(p, table) : unpack_lut32<2>(p, table);
      store16(_mm256_castsi256_si128(v), out + c);
      store16(_mm256_extracti128_si256(v, 1), out + c + 16);
    }
    return;
  }
  // lut4: 16 index bytes hold columns c .. c+31 (low nibble first); look both
  // nibbles up in the row's 16-entry table and interleave them back into
  // column order.
  const __m128i tbl = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.table(n)));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (int64_t c = 0; c < cols; c += 32) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c / 2));
    const __m128i lo = _mm_shuffle_epi8(tbl, _mm_and_si128(v, low4));
    const __m128i hi = _mm_shuffle_epi8(tbl, _mm_and_si128(_mm_srli_epi16(v, 4), low4));
    store16(_mm_unpacklo_epi8(lo, hi), out + c);
    store16(_mm_unpackhi_epi8(lo, hi), out + c + 16);
  }
}

void qlinear_f32gemm_avx2(const QLinearWeights& w, const float* x, int64_t tokens, const float* bias,
                          int64_t n_begin, int64_t n_end, float* y, int64_t ldy) {
  if (!isa_supported(Isa::Avx2)) fail("", "qlinear_f32gemm_avx2", "this CPU has no AVX2");
  const int64_t cols = w.cols();
  thread_local std::vector<float> panel;
  panel.resize(static_cast<size_t>(kPanelRows * cols));
  for (int64_t p0 = n_begin; p0 < n_end; p0 += kPanelRows) {
    const int64_t rows = std::min(kPanelRows, n_end - p0);
    for (int64_t r = 0; r < rows; ++r) expand_row_f32_avx2(w, p0 + r, panel.data() + r * cols);
    // Token tiles outermost: a tile's activations stay in L1 while every
    // row pair of the panel passes over them.
    for (int64_t t0 = 0; t0 < tokens; t0 += kTileTokens) {
      const float* xt = x + t0 * cols;
      float* yt = y + t0 * ldy;
      int64_t r = 0;
      for (; r + kTileRows <= rows; r += kTileRows)
        tile_tokens<kTileRows>(tokens - t0, panel.data() + r * cols, cols, xt, cols, w, p0 + r, bias, yt, ldy);
      if (rows - r == 2)
        tile_tokens<2>(tokens - t0, panel.data() + r * cols, cols, xt, cols, w, p0 + r, bias, yt, ldy);
      else if (rows - r == 1)
        tile_tokens<1>(tokens - t0, panel.data() + r * cols, cols, xt, cols, w, p0 + r, bias, yt, ldy);
    }
  }
}

}  // namespace tessera::kernels

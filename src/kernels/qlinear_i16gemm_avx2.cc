// AVX2 int16 prefill GEMM on stored lut4 / lut3 / lut2 / int8 weights;
// contract in kernels/qlinear_i16gemm.h.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/aligned_vector.h"
#include "core/error.h"
#include "kernels/lane_reduce.h"
#include "kernels/lut_unpack_avx2.h"
#include "kernels/qlinear_i16gemm.h"

#define TESSERA_AVX2 __attribute__((target("avx2,fma")))

namespace tessera::kernels {

namespace {

constexpr int64_t kPanelRows = 32;  // rows expanded at a time (32 · cols · 2 bytes, held in L2)
constexpr int kTileRows = 2, kTileTokens = 4;

// Sign-extends 32 int8 weights (column order) to int16 at out[0..31].
TESSERA_AVX2 inline void store32(__m256i b, int16_t* out) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(b)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm256_cvtepi8_epi16(_mm256_extracti128_si256(b, 1)));
}

// The hot step of the 2-row × 4-token tile over one block: bytes / 32
// iterations of 16 columns, each loading the two rows' and the four tokens'
// int16 vectors once and adding vpmaddwd(row, token) into sum[row][token]
// (8 int32 lanes; lane j adds the products of elements 2j and 2j+1). In asm
// because GCC's code for the same intrinsics loads every token vector once
// per row (folded into vpmaddwd) and copies every sum once per iteration:
// then the loads, not the two multiply pipes, set the pace.
TESSERA_AVX2 inline void block_2x4(const int16_t* w0, const int16_t* w1, const int16_t* x0, const int16_t* x1,
                                   const int16_t* x2, const int16_t* x3, int64_t bytes, __m256i (&sum)[2][4]) {
  __m256i s00 = sum[0][0], s01 = sum[0][1], s02 = sum[0][2], s03 = sum[0][3];
  __m256i s10 = sum[1][0], s11 = sum[1][1], s12 = sum[1][2], s13 = sum[1][3];
  __m256i a, b, xv, prod;
  int64_t off = 0;
  asm("1:\n\t"
      "vmovdqu (%[w0],%[off]), %[a]\n\t"
      "vmovdqu (%[w1],%[off]), %[b]\n\t"
      "vmovdqu (%[x0],%[off]), %[xv]\n\t"
      "vpmaddwd %[a], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s00], %[s00]\n\t"
      "vpmaddwd %[b], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s10], %[s10]\n\t"
      "vmovdqu (%[x1],%[off]), %[xv]\n\t"
      "vpmaddwd %[a], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s01], %[s01]\n\t"
      "vpmaddwd %[b], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s11], %[s11]\n\t"
      "vmovdqu (%[x2],%[off]), %[xv]\n\t"
      "vpmaddwd %[a], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s02], %[s02]\n\t"
      "vpmaddwd %[b], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s12], %[s12]\n\t"
      "vmovdqu (%[x3],%[off]), %[xv]\n\t"
      "vpmaddwd %[a], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s03], %[s03]\n\t"
      "vpmaddwd %[b], %[xv], %[prod]\n\t"
      "vpaddd %[prod], %[s13], %[s13]\n\t"
      "add $32, %[off]\n\t"
      "cmp %[bytes], %[off]\n\t"
      "jl 1b"
      : [s00] "+x"(s00), [s01] "+x"(s01), [s02] "+x"(s02), [s03] "+x"(s03), [s10] "+x"(s10), [s11] "+x"(s11),
        [s12] "+x"(s12), [s13] "+x"(s13), [off] "+r"(off), [a] "=&x"(a), [b] "=&x"(b), [xv] "=&x"(xv),
        [prod] "=&x"(prod)
      : [w0] "r"(w0), [w1] "r"(w1), [x0] "r"(x0), [x1] "r"(x1), [x2] "r"(x2), [x3] "r"(x3), [bytes] "r"(bytes)
      : "cc", "memory");
  sum[0][0] = s00, sum[0][1] = s01, sum[0][2] = s02, sum[0][3] = s03;
  sum[1][0] = s10, sum[1][1] = s11, sum[1][2] = s12, sum[1][3] = s13;
}

// R expanded rows p (cols int16 each) × T tokens of acts from token t0: every
// block's exact int32 sums, one fma per lane and block, then the output.
template <int R, int T>
TESSERA_AVX2 void tile(const int16_t* p, const Int16Activations& acts, int64_t t0, const QLinearWeights& w,
                       int64_t n, const float* bias, float* y, int64_t ldy) {
  const int64_t cols = acts.cols;
  __m256 lanes[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) lanes[r][t] = _mm256_setzero_ps();
  const int16_t* x[T];
  const float* s[T];
  for (int t = 0; t < T; ++t) {
    x[t] = acts.q_row(t0 + t);
    s[t] = acts.scale_row(t0 + t);
  }
  for (int64_t c0 = 0, b = 0; c0 < cols; c0 += kI16Block, ++b) {
    const int64_t c1 = std::min(cols, c0 + kI16Block);
    __m256i sum[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) sum[r][t] = _mm256_setzero_si256();
    if constexpr (R == 2 && T == 4) {
      block_2x4(p + c0, p + cols + c0, x[0] + c0, x[1] + c0, x[2] + c0, x[3] + c0, (c1 - c0) * 2, sum);
    } else {
      for (int64_t c = c0; c < c1; c += 16) {
        __m256i wv[R];
        for (int r = 0; r < R; ++r) wv[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + r * cols + c));
        for (int t = 0; t < T; ++t) {
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t] + c));
          for (int r = 0; r < R; ++r) sum[r][t] = _mm256_add_epi32(sum[r][t], _mm256_madd_epi16(wv[r], xv));
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m256 sv = _mm256_broadcast_ss(s[t] + b);
      for (int r = 0; r < R; ++r) lanes[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r][t]), sv, lanes[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[(t0 + t) * ldy + n + r] = qlinear_output(reduce_lanes8_added(lanes[r][t]), w.out_scale(n + r), bias, n + r);
}

template <int R>
TESSERA_AVX2 void tile_tokens(const int16_t* p, const Int16Activations& acts, int64_t t0, const QLinearWeights& w,
                              int64_t n, const float* bias, float* y, int64_t ldy) {
  switch (std::min<int64_t>(acts.rows - t0, kTileTokens)) {
    case 4: return tile<R, 4>(p, acts, t0, w, n, bias, y, ldy);
    case 3: return tile<R, 3>(p, acts, t0, w, n, bias, y, ldy);
    case 2: return tile<R, 2>(p, acts, t0, w, n, bias, y, ldy);
    default: return tile<R, 1>(p, acts, t0, w, n, bias, y, ldy);
  }
}

}  // namespace

TESSERA_AVX2 void expand_row_i16_avx2(const QLinearWeights& w, int64_t n, int16_t* out) {
  const uint8_t* row = w.row(n);
  const int64_t cols = w.cols();
  if (w.format() == WeightFormat::Int8) {
    for (int64_t c = 0; c < cols; c += 32)
      store32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c)), out + c);
    return;
  }
  if (w.bits() == 3 || w.bits() == 2) {  // 32 columns per step (kernels/lut_unpack_avx2.h)
    const __m256i table = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.table(n)));
    for (int64_t c = 0; c < cols; c += 32) {
      const uint8_t* p = row + c / 8 * w.bits();
      store32(w.bits() == 3 ? unpack_lut32<3>(p, table) : unpack_lut32<2>(p, table), out + c);
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
    store32(_mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi)), out + c);
  }
}

void qlinear_i16gemm_avx2(const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                          int64_t n_begin, int64_t n_end, float* y, int64_t ldy) {
  if (!isa_supported(Isa::Avx2)) fail("", "qlinear_i16gemm_avx2", "this CPU has no AVX2");
  if (acts.cols != w.cols())
    fail("", "qlinear_i16gemm_avx2", "activations have {} columns, the weight {}", acts.cols, w.cols());
  const int64_t cols = w.cols();
  thread_local AlignedVector<int16_t> panel;  // 64-byte rows stay line-aligned when cols % 32 == 0
  panel.resize(static_cast<size_t>(kPanelRows * cols));
  for (int64_t p0 = n_begin; p0 < n_end; p0 += kPanelRows) {
    const int64_t rows = std::min(kPanelRows, n_end - p0);
    for (int64_t r = 0; r < rows; ++r) expand_row_i16_avx2(w, p0 + r, panel.data() + r * cols);
    // Token tiles outermost: a tile's activations stay in L1 while every
    // row pair of the panel passes over them.
    for (int64_t t0 = 0; t0 < acts.rows; t0 += kTileTokens) {
      int64_t r = 0;
      for (; r + kTileRows <= rows; r += kTileRows)
        tile_tokens<kTileRows>(panel.data() + r * cols, acts, t0, w, p0 + r, bias, y, ldy);
      if (r < rows) tile_tokens<1>(panel.data() + r * cols, acts, t0, w, p0 + r, bias, y, ldy);
    }
  }
}

}  // namespace tessera::kernels

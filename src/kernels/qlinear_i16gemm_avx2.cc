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
#define TESSERA_AVX_VNNI __attribute__((target("avx2,fma,avxvnni")))

namespace tessera::kernels {

namespace {

constexpr int64_t kPanelRows = 32;  // rows expanded at a time (32 · cols · 2 bytes, held in L2)
constexpr int kTileRows = 2, kTileTokens = 4;
constexpr int kVnniTileTokens = 6;  // the AVX-VNNI tile: 2 rows × 6 tokens

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

// The AVX-VNNI tile: 2 rows × 6 tokens, twelve sums. vpdpwssd does a
// vpmaddwd and the vpaddd that accumulates it in one µop, with the same
// exact int32 sums; its latency (about 5-6 cycles, two per cycle) needs
// twelve independent sums to keep both pipes busy, which leaves three of
// the sixteen ymm registers for the two rows' and one token's vectors, so
// the f32 lanes live in memory (lanes, 2 × 6 × 8 floats) and each block
// ends with a load, cvt + FMA and store per sum (the AVX-512 tile's
// epilogue, kernels/qlinear_i16gemm_avx512.cc, in registers there).
//
// One step: 16 columns at byte offset O of the rows (w, w + ws) and of the
// tokens (x0 + t·xs for t < 3, x3 + (t − 3)·xs after), twelve vpdpwssd into
// the sums ymm0 + t (row 0) and ymm6 + t (row 1). %{vex%} is {vex} (GCC
// escapes braces in asm strings): the AVX-VNNI encoding, not AVX512-VNNI's.
#define TESSERA_VNNI_STEP(O)                        \
  "vmovdqu " #O "(%[w]), %%ymm12\n\t"               \
  "vmovdqu " #O "(%[w],%[ws]), %%ymm13\n\t"         \
  "vmovdqu " #O "(%[x0]), %%ymm14\n\t"              \
  "%{vex%} vpdpwssd %%ymm14, %%ymm12, %%ymm0\n\t"     \
  "%{vex%} vpdpwssd %%ymm14, %%ymm13, %%ymm6\n\t"     \
  "vmovdqu " #O "(%[x0],%[xs]), %%ymm14\n\t"        \
  "%{vex%} vpdpwssd %%ymm14, %%ymm12, %%ymm1\n\t"     \
  "%{vex%} vpdpwssd %%ymm14, %%ymm13, %%ymm7\n\t"     \
  "vmovdqu " #O "(%[x0],%[xs],2), %%ymm14\n\t"      \
  "%{vex%} vpdpwssd %%ymm14, %%ymm12, %%ymm2\n\t"     \
  "%{vex%} vpdpwssd %%ymm14, %%ymm13, %%ymm8\n\t"     \
  "vmovdqu " #O "(%[x3]), %%ymm14\n\t"              \
  "%{vex%} vpdpwssd %%ymm14, %%ymm12, %%ymm3\n\t"     \
  "%{vex%} vpdpwssd %%ymm14, %%ymm13, %%ymm9\n\t"     \
  "vmovdqu " #O "(%[x3],%[xs]), %%ymm14\n\t"        \
  "%{vex%} vpdpwssd %%ymm14, %%ymm12, %%ymm4\n\t"     \
  "%{vex%} vpdpwssd %%ymm14, %%ymm13, %%ymm10\n\t"    \
  "vmovdqu " #O "(%[x3],%[xs],2), %%ymm14\n\t"      \
  "%{vex%} vpdpwssd %%ymm14, %%ymm12, %%ymm5\n\t"     \
  "%{vex%} vpdpwssd %%ymm14, %%ymm13, %%ymm11\n\t"
// Token T's two sums (ymm S0, S1) to f32, times its block scale (c + 4·T
// bytes), added into its lanes (l + 32·T bytes for row 0, l + 192 + 32·T for
// row 1): lanes = fma(float(sum), scale, lanes), as the contract says.
#define TESSERA_VNNI_SCALE(T, S0, S1)                     \
  "vbroadcastss 4*" #T "(%[c]), %%ymm14\n\t"              \
  "vcvtdq2ps %%ymm" #S0 ", %%ymm" #S0 "\n\t"              \
  "vcvtdq2ps %%ymm" #S1 ", %%ymm" #S1 "\n\t"              \
  "vmovaps 32*" #T "(%[l]), %%ymm12\n\t"                  \
  "vmovaps 192+32*" #T "(%[l]), %%ymm13\n\t"              \
  "vfmadd231ps %%ymm14, %%ymm" #S0 ", %%ymm12\n\t"        \
  "vfmadd231ps %%ymm14, %%ymm" #S1 ", %%ymm13\n\t"        \
  "vmovaps %%ymm12, 32*" #T "(%[l])\n\t"                  \
  "vmovaps %%ymm13, 192+32*" #T "(%[l])\n\t"
#define TESSERA_VNNI_ZERO(R) "vpxor %%ymm" #R ", %%ymm" #R ", %%ymm" #R "\n\t"
#define TESSERA_VNNI_BLOCK_START                                                                     \
  TESSERA_VNNI_ZERO(0) TESSERA_VNNI_ZERO(1) TESSERA_VNNI_ZERO(2) TESSERA_VNNI_ZERO(3) TESSERA_VNNI_ZERO(4) \
  TESSERA_VNNI_ZERO(5) TESSERA_VNNI_ZERO(6) TESSERA_VNNI_ZERO(7) TESSERA_VNNI_ZERO(8) TESSERA_VNNI_ZERO(9) \
  TESSERA_VNNI_ZERO(10) TESSERA_VNNI_ZERO(11)                                                        \
  TESSERA_VNNI_STEP(0) TESSERA_VNNI_STEP(32) TESSERA_VNNI_STEP(64) TESSERA_VNNI_STEP(96)
#define TESSERA_VNNI_BLOCK_END                                                                        \
  TESSERA_VNNI_SCALE(0, 0, 6) TESSERA_VNNI_SCALE(1, 1, 7) TESSERA_VNNI_SCALE(2, 2, 8)                \
  TESSERA_VNNI_SCALE(3, 3, 9) TESSERA_VNNI_SCALE(4, 4, 10) TESSERA_VNNI_SCALE(5, 5, 11)

// Rows p, p + cols (expanded, cols int16 each) × the full token tile at x0
// (token t at x0 + t·cols), scales[6 b + t] token t's scale of block b, over
// every block of the columns (a multiple of 64: a last block of 64 runs its
// first four steps); then the twelve outputs. Per block, straight-line code
// (no inner loop, no mispredicted exit per block).
TESSERA_AVX_VNNI void tile_2x6_vnni(const int16_t* p, const int16_t* x0, int64_t cols, const float* scales,
                                    const QLinearWeights& w, int64_t n, const float* bias, float* y, int64_t ldy) {
  alignas(32) float lanes[2][kVnniTileTokens][8] = {};
  const int64_t ws = cols * 2, xs = cols * 2;
  for (int64_t c0 = 0; c0 < cols; c0 += kI16Block) {
    const int16_t *wc = p + c0, *y0 = x0 + c0, *y3 = x0 + 3 * cols + c0;
    const float* c = scales + kVnniTileTokens * (c0 / kI16Block);
#define TESSERA_VNNI_OPERANDS                                                                                      \
  :                                                                                                                \
  : [w] "r"(wc), [ws] "r"(ws), [x0] "r"(y0), [x3] "r"(y3), [xs] "r"(xs), [c] "r"(c), [l] "r"(&lanes[0][0][0])     \
  : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",    \
    "xmm12", "xmm13", "xmm14"
    if (cols - c0 >= kI16Block) {
      asm volatile(TESSERA_VNNI_BLOCK_START TESSERA_VNNI_STEP(128) TESSERA_VNNI_STEP(160) TESSERA_VNNI_STEP(192)
                       TESSERA_VNNI_STEP(224) TESSERA_VNNI_BLOCK_END TESSERA_VNNI_OPERANDS);
    } else {  // a row's last 64 columns
      asm volatile(TESSERA_VNNI_BLOCK_START TESSERA_VNNI_BLOCK_END TESSERA_VNNI_OPERANDS);
    }
#undef TESSERA_VNNI_OPERANDS
  }
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < kVnniTileTokens; ++t)
      y[t * ldy + n + r] =
          qlinear_output(reduce_lanes8_added(_mm256_load_ps(lanes[r][t])), w.out_scale(n + r), bias, n + r);
}

// R rows × tokens [t_begin, t_end) in tiles of up to kTileTokens.
template <int R>
TESSERA_AVX2 void tile_tokens(const int16_t* p, const Int16Activations& acts, int64_t t_begin, int64_t t_end,
                              const QLinearWeights& w, int64_t n, const float* bias, float* y, int64_t ldy) {
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kTileTokens) {
    switch (std::min<int64_t>(t_end - t0, kTileTokens)) {
      case 4: tile<R, 4>(p, acts, t0, w, n, bias, y, ldy); break;
      case 3: tile<R, 3>(p, acts, t0, w, n, bias, y, ldy); break;
      case 2: tile<R, 2>(p, acts, t0, w, n, bias, y, ldy); break;
      default: tile<R, 1>(p, acts, t0, w, n, bias, y, ldy); break;
    }
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
  thread_local std::vector<float> tile_scales;
  panel.resize(static_cast<size_t>(kPanelRows * cols));
  // With AVX-VNNI, whole 6-token tiles run tile_2x6_vnni (the rest, and an
  // odd last row, the vpmaddwd tiles: same bits). Their block scales by
  // block (tile_scales[6 b + t]), once per call.
  const int64_t vnni_tokens =
      avx_vnni_enabled() && cols % 64 == 0 ? gather_tile_scales(acts, kVnniTileTokens, tile_scales) : 0;
  for (int64_t p0 = n_begin; p0 < n_end; p0 += kPanelRows) {
    const int64_t rows = std::min(kPanelRows, n_end - p0);
    for (int64_t r = 0; r < rows; ++r) expand_row_i16_avx2(w, p0 + r, panel.data() + r * cols);
    // Token tiles outermost: a tile's activations stay in L1 while every
    // row pair of the panel passes over them.
    for (int64_t t0 = 0; t0 < vnni_tokens; t0 += kVnniTileTokens) {
      const float* scales = tile_scales.data() + t0 * acts.blocks;
      int64_t r = 0;
      for (; r + kTileRows <= rows; r += kTileRows)
        tile_2x6_vnni(panel.data() + r * cols, acts.q_row(t0), cols, scales, w, p0 + r, bias, y + t0 * ldy, ldy);
      if (r < rows) tile_tokens<1>(panel.data() + r * cols, acts, t0, t0 + kVnniTileTokens, w, p0 + r, bias, y, ldy);
    }
    for (int64_t t0 = vnni_tokens; t0 < acts.rows; t0 += kTileTokens) {
      const int64_t t1 = std::min(acts.rows, t0 + kTileTokens);
      int64_t r = 0;
      for (; r + kTileRows <= rows; r += kTileRows)
        tile_tokens<kTileRows>(panel.data() + r * cols, acts, t0, t1, w, p0 + r, bias, y, ldy);
      if (r < rows) tile_tokens<1>(panel.data() + r * cols, acts, t0, t1, w, p0 + r, bias, y, ldy);
    }
  }
}

}  // namespace tessera::kernels

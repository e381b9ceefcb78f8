// AVX-512 VNNI int16 prefill GEMM on stored lut4 / lut3 / lut2 / int8
// weights; contract in kernels/qlinear_i16gemm.h (the AVX2 kernel's bits).
//
// The contract's lanes are 8 int32 sums per 16 columns (lane j: columns 2j
// and 2j+1 of each 16), the shape of one 256-bit vpmaddwd. A 512-bit
// vpdpwssd would put 32 columns of one row in 16 lanes, and folding its two
// halves back to 8 lanes before each block's f32 multiply-add costs a
// shuffle and an add per row, token and block. Instead the expanded weight
// panel pairs rows: each 64-byte vector holds 16 columns of row 2i in its
// low half and the same 16 columns of row 2i+1 in its high half, and the
// token's 16 activations are broadcast to both halves. One vpdpwssd then
// computes both rows' contract lanes at once, exactly (int32, no
// saturation: at most 16 · 127 · 32767 per lane and block), and one cvt +
// FMA per block applies the token's block scale to both rows. The low half
// of the f32 lanes reduces to row 2i's output, the high half to row 2i+1's.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized" inside casts and inserts; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/aligned_vector.h"
#include "core/error.h"
#include "kernels/lane_reduce.h"
#include "kernels/qlinear_i16gemm.h"

#define TESSERA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

namespace tessera::kernels {

namespace {

constexpr int64_t kPanelRows = 16;  // rows expanded at a time: 16 pairs, 32 · cols · 2 bytes (L2)
constexpr int kTilePairs = 2, kTileTokens = 6;

// expand_pair for lut4 rows, straight into the paired layout in one pass,
// 64 columns at a time (QLinearWeights holds whole 64-column chunks). Per chunk, the 32 index bytes of row n go to
// the low 256 bits of a vector and row n + 1's to the high (a zero row has
// index 0 and an all-zero table), and each 128-bit lane looks its nibbles up
// in its own row's table (vpshufb works per lane). Lane k then holds columns
// 32k .. 32k + 31 of its row (k = 0, 1 for row n, k = 2, 3 for row n + 1)
// as low- and high-nibble values; unpacking them back into column order
// gives, per lane, columns 32k .. 32k + 15 (lo) and 32k + 16 .. 32k + 31
// (hi). Reordering the lanes as [0, 2, 1, 3] puts row n's and row n + 1's
// same 16 columns side by side, and widening each 256-bit half to int16
// is one 64-byte group of the pair: groups 0 and 2 from lo, 1 and 3 from hi.
TESSERA_AVX512 void expand_pair_lut4(const QLinearWeights& w, int64_t n, bool second, int16_t* pair) {
  const int64_t cols = w.cols();
  const uint8_t* a = w.row(n);
  const uint8_t* b = second ? w.row(n + 1) : nullptr;
  const __m128i ta = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.table(n)));
  const __m128i tb = second ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.table(n + 1))) : _mm_setzero_si128();
  const __m512i table = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(ta, ta)), _mm256_set_m128i(tb, tb), 1);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i lanes_0213 = _mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7);
  for (int64_t c = 0; c < cols; c += 64) {
    const __m256i ia = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + c / 2));
    const __m256i ib = second ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + c / 2)) : _mm256_setzero_si256();
    const __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(ia), ib, 1);
    const __m512i even = _mm512_shuffle_epi8(table, _mm512_and_si512(idx, low4));
    const __m512i odd = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(idx, 4), low4));
    const __m512i lo = _mm512_permutexvar_epi64(lanes_0213, _mm512_unpacklo_epi8(even, odd));
    const __m512i hi = _mm512_permutexvar_epi64(lanes_0213, _mm512_unpackhi_epi8(even, odd));
    int16_t* out = pair + 2 * c;  // groups c / 16 .. c / 16 + 3, 32 int16 each
    _mm512_storeu_si512(out, _mm512_cvtepi8_epi16(_mm512_castsi512_si256(lo)));
    _mm512_storeu_si512(out + 32, _mm512_cvtepi8_epi16(_mm512_castsi512_si256(hi)));
    _mm512_storeu_si512(out + 64, _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(lo, 1)));
    _mm512_storeu_si512(out + 96, _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(hi, 1)));
  }
}

// Rows n and n + 1 (a zero row for n + 1 == n_end) of w as the paired
// layout: pair[32 g .. 32 g + 15] = row n's columns 16 g .. 16 g + 15,
// pair[32 g + 16 .. 32 g + 31] = row n + 1's. `scratch` holds 2 · cols.
TESSERA_AVX512 void expand_pair(const QLinearWeights& w, int64_t n, int64_t n_end, int16_t* scratch, int16_t* pair) {
  const int64_t cols = w.cols();
  if (w.format() == WeightFormat::Lut4) return expand_pair_lut4(w, n, n + 1 < n_end, pair);
  int16_t* a = scratch;
  int16_t* b = scratch + cols;
  expand_row_i16_avx2(w, n, a);
  if (n + 1 < n_end) expand_row_i16_avx2(w, n + 1, b);
  else std::fill(b, b + cols, int16_t{0});
  for (int64_t c = 0; c < cols; c += 16) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + c));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + c));
    _mm512_storeu_si512(pair + 2 * c, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
  }
}

// One step of the 2-pair × 6-token tile: 16 columns at byte offset 2·O of
// the pairs (w, w + ws) and O of the tokens (x0 + t·xs for t < 3, x3 +
// (t − 3)·xs after), twelve vpdpwssd into the sums zmm8 + t (pair 0) and
// zmm14 + t (pair 1).
#define TESSERA_I16_STEP6(O)                           \
  "vmovdqu64 " #O "*2(%[w]), %%zmm20\n\t"              \
  "vmovdqu64 " #O "*2(%[w],%[ws]), %%zmm21\n\t"        \
  "vbroadcasti64x4 " #O "(%[x0]), %%zmm22\n\t"         \
  "vpdpwssd %%zmm22, %%zmm20, %%zmm8\n\t"              \
  "vpdpwssd %%zmm22, %%zmm21, %%zmm14\n\t"             \
  "vbroadcasti64x4 " #O "(%[x0],%[xs]), %%zmm23\n\t"   \
  "vpdpwssd %%zmm23, %%zmm20, %%zmm9\n\t"              \
  "vpdpwssd %%zmm23, %%zmm21, %%zmm15\n\t"             \
  "vbroadcasti64x4 " #O "(%[x0],%[xs],2), %%zmm22\n\t" \
  "vpdpwssd %%zmm22, %%zmm20, %%zmm10\n\t"             \
  "vpdpwssd %%zmm22, %%zmm21, %%zmm16\n\t"             \
  "vbroadcasti64x4 " #O "(%[x3]), %%zmm23\n\t"         \
  "vpdpwssd %%zmm23, %%zmm20, %%zmm11\n\t"             \
  "vpdpwssd %%zmm23, %%zmm21, %%zmm17\n\t"             \
  "vbroadcasti64x4 " #O "(%[x3],%[xs]), %%zmm22\n\t"   \
  "vpdpwssd %%zmm22, %%zmm20, %%zmm12\n\t"             \
  "vpdpwssd %%zmm22, %%zmm21, %%zmm18\n\t"             \
  "vbroadcasti64x4 " #O "(%[x3],%[xs],2), %%zmm23\n\t" \
  "vpdpwssd %%zmm23, %%zmm20, %%zmm13\n\t"             \
  "vpdpwssd %%zmm23, %%zmm21, %%zmm19\n\t"
// Token t's sums to f32, times its block scale (c + 4·t bytes), into its
// two lanes.
#define TESSERA_I16_SCALE(T, P0, P1, L0, L1)                         \
  "vbroadcastss 4*" #T "(%[c]), %%zmm22\n\t"                         \
  "vcvtdq2ps %%zmm" #P0 ", %%zmm" #P0 "\n\t"                         \
  "vcvtdq2ps %%zmm" #P1 ", %%zmm" #P1 "\n\t"                         \
  "vfmadd231ps %%zmm22, %%zmm" #P0 ", %[" #L0 "]\n\t"                \
  "vfmadd231ps %%zmm22, %%zmm" #P1 ", %[" #L1 "]\n\t"
#define TESSERA_I16_ZERO(R) "vpxord %%zmm" #R ", %%zmm" #R ", %%zmm" #R "\n\t"
#define TESSERA_I16_BLOCK_START                                                                               \
  TESSERA_I16_ZERO(8) TESSERA_I16_ZERO(9) TESSERA_I16_ZERO(10) TESSERA_I16_ZERO(11) TESSERA_I16_ZERO(12)      \
  TESSERA_I16_ZERO(13) TESSERA_I16_ZERO(14) TESSERA_I16_ZERO(15) TESSERA_I16_ZERO(16) TESSERA_I16_ZERO(17)    \
  TESSERA_I16_ZERO(18) TESSERA_I16_ZERO(19)                                                                   \
  TESSERA_I16_STEP6(0) TESSERA_I16_STEP6(32) TESSERA_I16_STEP6(64) TESSERA_I16_STEP6(96)
#define TESSERA_I16_BLOCK_END                                                                                 \
  TESSERA_I16_SCALE(0, 8, 14, l00, l10) TESSERA_I16_SCALE(1, 9, 15, l01, l11)                                 \
  TESSERA_I16_SCALE(2, 10, 16, l02, l12) TESSERA_I16_SCALE(3, 11, 17, l03, l13)                               \
  TESSERA_I16_SCALE(4, 12, 18, l04, l14) TESSERA_I16_SCALE(5, 13, 19, l05, l15)

// The 2-pair × 6-token tile over every block of the columns: w and w + ws
// bytes are the pairs, x0 + t · xs bytes token t's activations, and
// scales[6 b + t] token t's scale of block b. Per block, straight-line code
// (no inner loop, so no mispredicted exit per block): its columns / 16
// steps, each loading the two pairs' weight vectors and broadcasting each
// token's 16 activations once, add vpdpwssd(pair, token) into twelve zeroed
// sums; then each sum goes to f32 and one FMA with its token's block scale
// into the lanes. Twelve independent sums because a vpdpwssd has a latency
// of about 6 cycles and two issue per cycle here: the 2 × 4 tile's eight
// chains bound it to 8 / 6 per cycle (docs/BENCHMARKING.md, "Prefill
// without AMX"). In asm because GCC's code for the same intrinsics copies the
// sums through other registers every step and keeps the lanes on the
// stack; the lanes stay in registers across the blocks.
TESSERA_AVX512 inline void tile_2x6(const int16_t* w0, int64_t pair_stride, const int16_t* x0, int64_t token_stride,
                                    int64_t cols, const float* scales, __m512 (&lanes)[2][6]) {
  __m512 l00 = _mm512_setzero_ps(), l01 = l00, l02 = l00, l03 = l00, l04 = l00, l05 = l00;
  __m512 l10 = l00, l11 = l00, l12 = l00, l13 = l00, l14 = l00, l15 = l00;
  const int64_t ws = pair_stride * 2, xs = token_stride * 2;
  for (int64_t c0 = 0; c0 < cols; c0 += kI16Block) {
    const int16_t *w = w0 + 2 * c0, *y0 = x0 + c0, *y3 = x0 + 3 * token_stride + c0;
    const float* c = scales + 6 * (c0 / kI16Block);
    // Operands: 12 lanes in and out, 6 addresses (GCC's limit is 30).
#define TESSERA_I16_OPERANDS                                                                                    \
  : [l00] "+v"(l00), [l01] "+v"(l01), [l02] "+v"(l02), [l03] "+v"(l03), [l04] "+v"(l04), [l05] "+v"(l05),     \
    [l10] "+v"(l10), [l11] "+v"(l11), [l12] "+v"(l12), [l13] "+v"(l13), [l14] "+v"(l14), [l15] "+v"(l15)      \
  : [w] "r"(w), [ws] "r"(ws), [x0] "r"(y0), [x3] "r"(y3), [xs] "r"(xs), [c] "r"(c)                           \
  : "memory", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", \
    "xmm19", "xmm20", "xmm21", "xmm22", "xmm23"
    if (cols - c0 >= kI16Block) {
      asm(TESSERA_I16_BLOCK_START TESSERA_I16_STEP6(128) TESSERA_I16_STEP6(160) TESSERA_I16_STEP6(192)
              TESSERA_I16_STEP6(224) TESSERA_I16_BLOCK_END TESSERA_I16_OPERANDS);
    } else {  // a row's last 64 columns
      asm(TESSERA_I16_BLOCK_START TESSERA_I16_BLOCK_END TESSERA_I16_OPERANDS);
    }
#undef TESSERA_I16_OPERANDS
  }
  lanes[0][0] = l00, lanes[0][1] = l01, lanes[0][2] = l02, lanes[0][3] = l03, lanes[0][4] = l04, lanes[0][5] = l05;
  lanes[1][0] = l10, lanes[1][1] = l11, lanes[1][2] = l12, lanes[1][3] = l13, lanes[1][4] = l14, lanes[1][5] = l15;
}

// Rows n .. n + 3 of one token from two pairs' f32 lanes (a: rows n, n + 1;
// b: rows n + 2, n + 3), written where < n_end: reduce_lanes8_added on all
// four at once, the same additions of the same operands (each 128-bit chunk
// ends up holding one row's tree: lanes j + j+4, then j + j+2, then j + j+1),
// then out_scale and the bias as qlinear_output.
TESSERA_AVX512 inline void store_four_outputs(__m512 a, __m512 b, const QLinearWeights& w, int64_t n, int64_t n_end,
                                              const float* bias, float* yt) {
  // Chunks of a: [n lanes 0-3, n lanes 4-7, n+1 lanes 0-3, n+1 lanes 4-7]; likewise b.
  const __m512 first = _mm512_shuffle_f32x4(a, b, 0x88);   // [a0, a2, b0, b2]
  const __m512 second = _mm512_shuffle_f32x4(a, b, 0xdd);  // [a1, a3, b1, b3]
  const __m512 h4 = _mm512_add_ps(first, second);
  const __m512 h2 = _mm512_add_ps(h4, _mm512_permute_ps(h4, 0x4e));  // lanes j + j+2
  const __m512 h1 = _mm512_add_ps(h2, _mm512_movehdup_ps(h2));       // lanes j + j+1
  const __m128 sums = _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), h1));
  const __mmask8 live = static_cast<__mmask8>((1u << std::min<int64_t>(4, n_end - n)) - 1);
  __m128 out = _mm_mul_ps(sums, _mm_maskz_loadu_ps(live, w.out_scale_data() + n));
  if (bias) out = _mm_add_ps(out, _mm_maskz_loadu_ps(live, bias + n));
  _mm_mask_storeu_ps(yt + n, live, out);
}

// P row pairs (pair i at panel + i · 2 · cols) × T tokens from t0, rows from
// n (outputs only for rows < n_end). tile_scales: the 6 tokens' block scales
// by block (scales[6 b + t]) when T is 6.
template <int P, int T>
TESSERA_AVX512 void tile(const int16_t* panel, const Int16Activations& acts, int64_t t0, const float* tile_scales,
                         const QLinearWeights& w, int64_t n, int64_t n_end, const float* bias, float* y,
                         int64_t ldy) {
  const int64_t cols = acts.cols;
  __m512 lanes[P][T];
  for (int i = 0; i < P; ++i)
    for (int t = 0; t < T; ++t) lanes[i][t] = _mm512_setzero_ps();
  const int16_t* x[T];
  const float* s[T];
  for (int t = 0; t < T; ++t) {
    x[t] = acts.q_row(t0 + t);
    s[t] = acts.scale_row(t0 + t);
  }
  if constexpr (P == 2 && T == 6) {
    tile_2x6(panel, 2 * cols, x[0], cols, cols, tile_scales, lanes);
  } else {
    for (int64_t c0 = 0, b = 0; c0 < cols; c0 += kI16Block, ++b) {
      const int64_t c1 = std::min(cols, c0 + kI16Block);
      __m512i sum[P][T];
      for (int i = 0; i < P; ++i)
        for (int t = 0; t < T; ++t) sum[i][t] = _mm512_setzero_si512();
      for (int64_t c = c0; c < c1; c += 16) {
        __m512i wv[P];
#pragma GCC unroll 4
        for (int i = 0; i < P; ++i) wv[i] = _mm512_loadu_si512(panel + i * 2 * cols + 2 * c);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m512i xv =
              _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t] + c)));
#pragma GCC unroll 4
          for (int i = 0; i < P; ++i) sum[i][t] = _mm512_dpwssd_epi32(sum[i][t], wv[i], xv);
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m512 sv = _mm512_set1_ps(s[t][b]);
#pragma GCC unroll 4
        for (int i = 0; i < P; ++i) lanes[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i][t]), sv, lanes[i][t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    float* yt = y + (t0 + t) * ldy;
    if constexpr (P == 2) {
      store_four_outputs(lanes[0][t], lanes[1][t], w, n, n_end, bias, yt);
    } else {
      yt[n] = qlinear_output(reduce_lanes8_added(_mm512_castps512_ps256(lanes[0][t])), w.out_scale(n), bias, n);
      if (n + 1 < n_end)
        yt[n + 1] = qlinear_output(reduce_lanes8_added(_mm512_extractf32x8_ps(lanes[0][t], 1)), w.out_scale(n + 1),
                                   bias, n + 1);
    }
  }
}

template <int P>
TESSERA_AVX512 void tile_tokens(const int16_t* panel, const Int16Activations& acts, int64_t t0,
                                const float* tile_scales, const QLinearWeights& w, int64_t n, int64_t n_end,
                                const float* bias, float* y, int64_t ldy) {
  switch (std::min<int64_t>(acts.rows - t0, kTileTokens)) {
    case 6: return tile<P, 6>(panel, acts, t0, tile_scales, w, n, n_end, bias, y, ldy);
    case 5: return tile<P, 5>(panel, acts, t0, tile_scales, w, n, n_end, bias, y, ldy);
    case 4: return tile<P, 4>(panel, acts, t0, tile_scales, w, n, n_end, bias, y, ldy);
    case 3: return tile<P, 3>(panel, acts, t0, tile_scales, w, n, n_end, bias, y, ldy);
    case 2: return tile<P, 2>(panel, acts, t0, tile_scales, w, n, n_end, bias, y, ldy);
    default: return tile<P, 1>(panel, acts, t0, tile_scales, w, n, n_end, bias, y, ldy);
  }
}

}  // namespace

void qlinear_i16gemm_avx512(const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                            int64_t n_begin, int64_t n_end, float* y, int64_t ldy) {
  if (!isa_supported(Isa::Avx512)) fail("", "qlinear_i16gemm_avx512", "this CPU has no AVX-512 VNNI");
  if (acts.cols != w.cols())
    fail("", "qlinear_i16gemm_avx512", "activations have {} columns, the weight {}", acts.cols, w.cols());
  const int64_t cols = w.cols();
  thread_local AlignedVector<int16_t> panel, scratch;  // pairs stay line-aligned when cols % 32 == 0
  thread_local std::vector<float> tile_scales;
  panel.resize(static_cast<size_t>(kPanelRows * cols));
  scratch.resize(static_cast<size_t>(2 * cols));
  // Each full token tile's block scales by block (scales[6 b + t]), once per
  // call: every panel's pass over the tile reads them.
  gather_tile_scales(acts, kTileTokens, tile_scales);
  for (int64_t p0 = n_begin; p0 < n_end; p0 += kPanelRows) {
    const int64_t p1 = std::min(n_end, p0 + kPanelRows);
    const int64_t pairs = (p1 - p0 + 1) / 2;
    for (int64_t i = 0; i < pairs; ++i)
      expand_pair(w, p0 + 2 * i, p1, scratch.data(), panel.data() + i * 2 * cols);
    // Token tiles outermost: a tile's activations stay in L1 while every
    // row pair of the panel passes over them.
    for (int64_t t0 = 0; t0 < acts.rows; t0 += kTileTokens) {
      const float* scales = tile_scales.data() + (t0 / kTileTokens) * kTileTokens * acts.blocks;  // full tiles only
      int64_t i = 0;
      for (; i + kTilePairs <= pairs; i += kTilePairs)
        tile_tokens<kTilePairs>(panel.data() + i * 2 * cols, acts, t0, scales, w, p0 + 2 * i, p1, bias, y, ldy);
      for (; i < pairs; ++i)
        tile_tokens<1>(panel.data() + i * 2 * cols, acts, t0, scales, w, p0 + 2 * i, p1, bias, y, ldy);
    }
  }
}

}  // namespace tessera::kernels

// AVX2 integer-dot linear kernels; contract in kernels/qlinear.h.
//
// Per 32 bytes (half of a 64-byte chunk, i.e. lanes 8h..8h+7):
//   lut4: vpshufb looks the palette up (a 16-entry table in each 128-bit
//         lane) for the masked low and high nibbles, giving signed int8
//         weights p; int8: the weight bytes themselves are p; lut3 / lut2:
//         8·bits index bytes unpacked through the table into each block's
//         first and last 4 columns (kernels/lut_unpack_avx2.h), against the
//         BlockHalves activations as lut4's nibbles are against its pairs.
//   Full-range activations (|a| ≤ 127): vpmaddubsw(|p|, sign(a, p)) forms
//   p·a for adjacent byte pairs without overflow (|p| ≤ 128: a pair sums to
//   at most 32512). Narrow ones (|a| ≤ 63, kActQmaxNarrow): the weights
//   enter unsigned, u = p + 128 ≤ 255 (the table, or the int8 bytes, xor
//   0x80), vpmaddubsw(u, a) cannot saturate (255 · 63 · 2 = 32130), and the
//   lane's bias16 = −128 · Σa is added once per lane and pass: no vpabsb /
//   vpsignb, which on Zen 3 share the two pipes of the multiplies.
//   vpmaddwd with ones then adds adjacent pairs into int32 lanes of 4 bytes
//   — the same lanes as the AVX-512 kernel's vpdpbusd. With AVX-VNNI one
//   VEX vpdpbusd does all three (same sums). One cvt + FMA per half and
//   activation pass applies the activation scales.
// blk4 / blk8 (a quantized GGUF's own values): lut4's / int8's steps over
//   the codes, then per half the passes form t and the half's one or two
//   block scales (and offsets, against the lanes' Σq) are applied per lane
//   (kernels/qlinear.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/lane_reduce.h"
#include "kernels/lut_unpack_avx2.h"
#include "kernels/qlinear.h"

#define TESSERA_AVX2 __attribute__((target("avx2,fma,f16c,bmi,bmi2")))

namespace tessera::kernels {

namespace {

constexpr int kPrefetchL1 = 1024;
constexpr int kPrefetchL2 = 8192;

// acc + Σ p·a over each int32 lane's 4 bytes: exact for |a| ≤ 127 (signed
// p), or, with U, for |a| ≤ 63 and p = the unsigned u (then Σ u·a = Σ p·a +
// 128·Σa, which the caller's bias16 removes). With V (AVX-VNNI, kernels/
// cpu_isa.h) one VEX vpdpbusd forms and adds the same exact lane sums that
// vpmaddubsw + vpmaddwd + vpaddd do (vpmaddubsw cannot saturate on these
// operands), so both give the same bits. In asm: the intrinsic would need
// the whole kernel compiled for AVX-VNNI, which CPUs without it must not run.
template <bool U, bool V>
TESSERA_AVX2 inline __m256i dot4_add(__m256i acc, __m256i p, __m256i a, __m256i ones16) {
  const __m256i u = U ? p : _mm256_abs_epi8(p);
  const __m256i b = U ? a : _mm256_sign_epi8(a, p);
  if constexpr (V) {
    asm("%{vex%} vpdpbusd %[b], %[u], %[acc]" : [acc] "+x"(acc) : [u] "x"(u), [b] "x"(b));
    return acc;
  }
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, b), ones16));
}

// Per-block weight scales (blk4 / blk8): KH block values per half chunk (0:
// none, the per-row formats), stored as f32 (F) or f16, offsets (O).
template <int KH, bool F, bool O>
struct Blocks {
  static constexpr int kh = KH;
  static constexpr bool f32 = F, offsets = O;
  static constexpr int64_t bytes = KH * (F ? 4 : 2);  // one half's values per row
};
using NoBlocks = Blocks<0, false, false>;

// A half chunk's KH block values at p spread over its 8 lanes (lane j takes
// value j·KH/8).
template <int KH, bool F>
TESSERA_AVX2 inline __m256 half_lane_values(const uint8_t* p) {
  if constexpr (KH == 1) {
    if constexpr (F) return _mm256_broadcast_ss(reinterpret_cast<const float*>(p));
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
  } else {
    static_assert(KH == 2);
    __m128 v;
    if constexpr (F) {
      v = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p)));
    } else {
      uint32_t two;
      std::memcpy(&two, p, 4);
      v = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(two)));
    }
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v), _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0));
  }
}

// One token's q bytes, lane scales and (narrow activations) lane biases per
// activation pass.
template <int P>
struct TokenPasses {
  const int8_t* q[P];
  const float* s[P];
  const int32_t* b[P];
};

// One half H (lanes 8H..8H+7) of chunk m, for R rows and P activation passes.
// B: bits per weight (8: int8, 4: lut4, 3: lut3, 2: lut2). U: narrow
// activations, unsigned weights (tbl then holds u = p + 128). V: AVX-VNNI.
// Bk: the blocks of a blk4 / blk8 weight (rows n .. n + R - 1 of w).
template <int R, int P, int B, bool U, bool V, int H, class Bk>
TESSERA_AVX2 __attribute__((always_inline)) inline void half_chunk(const uint8_t* const* row, const __m256i* tbl,
                                                                   const TokenPasses<P>& a, int64_t m,
                                                                   __m256 (*acc)[2], const QLinearWeights& w,
                                                                   int64_t n) {
  constexpr bool lut = B <= 4;  // two weight vectors per 128-column chunk
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  // Blocks with offsets: u = Σ_p s_p · (lane's Σq), Σq = bias16 · (−1/128) exactly.
  __m256 u = _mm256_setzero_ps();
  if constexpr (Bk::offsets) {
    const __m256 k = _mm256_set1_ps(-1.0f / 128.0f);
    for (int p = 0; p < P; ++p) {
      const __m256 qs = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.b[p] + 16 * m + 8 * H))), k);
      const __m256 sp = _mm256_loadu_ps(a.s[p] + 16 * m + 8 * H);
      u = p == 0 ? _mm256_mul_ps(sp, qs) : _mm256_fmadd_ps(sp, qs, u);
    }
  }
  for (int r = 0; r < R; ++r) {
    // This half's bytes: 32 (int8: 32 columns) or 8·B (lut: 64 columns).
    const uint8_t* p = row[r] + (lut ? (64 * m + 32 * H) * B / 4 : 64 * m + 32 * H);
    if constexpr (H == 0) {  // a chunk is at most 64 bytes of a row: one line each
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchL1), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchL2), _MM_HINT_T1);
    }
    // The looked-up weights (lut: low / high nibbles, or first / second
    // block halves), then each activation pass.
    __m256i v = _mm256_setzero_si256(), plo = v, phi = v;
    if constexpr (B == 4) {
      v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      plo = _mm256_shuffle_epi8(tbl[r], _mm256_and_si256(v, low4));
      phi = _mm256_shuffle_epi8(tbl[r], _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
    } else if constexpr (lut) {
      unpack_lut64_halves<B>(p, tbl[r], plo, phi);
    } else {
      v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      if constexpr (U) v = _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80)));
    }
    __m256 t = _mm256_setzero_ps();
    for (int k = 0; k < P; ++k) {
      // The lane bias (narrow activations) first: integer sums, so the
      // order of the additions does not change them.
      __m256i d = U ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.b[k] + 16 * m + 8 * H))
                    : _mm256_setzero_si256();
      if constexpr (lut) {
        const __m256i alo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q[k] + 128 * m + 32 * H));
        const __m256i ahi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q[k] + 128 * m + 64 + 32 * H));
        d = dot4_add<U, V>(dot4_add<U, V>(d, plo, alo, ones16), phi, ahi, ones16);
      } else {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q[k] + 64 * m + 32 * H));
        d = dot4_add<U, V>(d, v, av, ones16);
      }
      const __m256 s = _mm256_loadu_ps(a.s[k] + 16 * m + 8 * H);
      if constexpr (Bk::kh == 0) acc[r][H] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc[r][H]);
      else t = k == 0 ? _mm256_mul_ps(_mm256_cvtepi32_ps(d), s) : _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, t);
    }
    if constexpr (Bk::kh > 0) {
      const int64_t at = Bk::bytes * (2 * m + H);
      acc[r][H] = _mm256_fmadd_ps(half_lane_values<Bk::kh, Bk::f32>(w.block_scales(n + r) + at), t, acc[r][H]);
      if constexpr (Bk::offsets)
        acc[r][H] = _mm256_fmadd_ps(half_lane_values<Bk::kh, Bk::f32>(w.block_offsets(n + r) + at), u, acc[r][H]);
    }
  }
}

template <int R, int P, int B, bool U, bool V, class Bk = NoBlocks>
TESSERA_AVX2 void rows_avx2(const QLinearWeights& w, const Int8Activations& acts, int64_t t, int64_t n,
                            const float* bias, float* y) {
  __m256i tbl[R];
  const uint8_t* row[R];
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) {
    tbl[r] = B != 8 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.table(n + r))) : _mm256_setzero_si256();
    if constexpr (U && B != 8) tbl[r] = _mm256_xor_si256(tbl[r], _mm256_set1_epi8(static_cast<char>(0x80)));
    row[r] = w.row(n + r);
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  }
  TokenPasses<P> a;
  for (int k = 0; k < P; ++k) {
    a.q[k] = acts.q_row(t, k);
    a.s[k] = acts.scale_row(t, k);
    a.b[k] = acts.bias_row(t, k);
  }
  // Whole chunks, then (lut rows of 64 columns past the last whole chunk) a first half.
  const int64_t whole = w.cols() / act_chunk_cols(acts.layout);
  for (int64_t m = 0; m < whole; ++m) {
    half_chunk<R, P, B, U, V, 0, Bk>(row, tbl, a, m, acc, w, n);
    half_chunk<R, P, B, U, V, 1, Bk>(row, tbl, a, m, acc, w, n);
  }
  if (whole < acts.chunks) half_chunk<R, P, B, U, V, 0, Bk>(row, tbl, a, whole, acc, w, n);
  for (int r = 0; r < R; ++r)
    y[n + r] = qlinear_output(reduce_lanes16_avx2(acc[r][0], acc[r][1]), w.out_scale(n + r), bias, n + r);
}

}  // namespace

void qlinear_avx2(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                  int64_t n_end, float* y, int64_t ldy) {
  const int bits = w.bits();
  const bool narrow = acts.qmax <= kActQmaxNarrow;
  with_act_passes(acts, [&](auto passes) {
    constexpr int P = decltype(passes)::value;
    auto run = [&](auto unsigned_weights, auto vnni) {
      constexpr bool U = decltype(unsigned_weights)::value;
      constexpr bool V = decltype(vnni)::value;
      for_each_row_block<2>(acts.rows, n_begin, n_end, [&](auto rows, int64_t t, int64_t n) {
        constexpr int R = decltype(rows)::value;
        if (w.blocked())
          return with_blocks<Blocks, 2, 1>(w, [&](auto blocks) {
            using Bk = decltype(blocks);
            if constexpr (Bk::kh == 2)  // blk4: two 32-column blocks per 64
              if (bits == 4) return rows_avx2<R, P, 4, U, V, Bk>(w, acts, t, n, bias, y + t * ldy);
            rows_avx2<R, P, 8, U, V, Bk>(w, acts, t, n, bias, y + t * ldy);
          });
        switch (bits) {
          case 4: return rows_avx2<R, P, 4, U, V>(w, acts, t, n, bias, y + t * ldy);
          case 3: return rows_avx2<R, P, 3, U, V>(w, acts, t, n, bias, y + t * ldy);
          case 2: return rows_avx2<R, P, 2, U, V>(w, acts, t, n, bias, y + t * ldy);
          default: return rows_avx2<R, P, 8, U, V>(w, acts, t, n, bias, y + t * ldy);
        }
      });
    };
    auto with_vnni = [&](auto unsigned_weights) {
      if (avx_vnni_enabled()) run(unsigned_weights, std::true_type{});
      else run(unsigned_weights, std::false_type{});
    };
    if (narrow) with_vnni(std::true_type{});
    else with_vnni(std::false_type{});
  });
}

}  // namespace tessera::kernels

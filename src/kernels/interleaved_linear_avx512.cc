// AVX-512 (VNNI) interleaved linear; contract and layout in
// kernels/interleaved_linear.h.
//
// Per 8-column group of RG row groups: the weights of 16 rows × 8 columns
// as two vectors (8 bits: two loads; 4 bits: one load, its low and high
// nibbles masked apart and, unless the codes are the values, looked up in
// the biased table with vpshufb; 5 / 6 bits: the nibbles, each or-ed with
// its high bits shifted out of the unit's plane vector), then per token two
// vpdpbusd against the
// token's two 4-byte activation words broadcast, starting from
// −weight_offset · Σq, a convert and one multiply-add with the group's
// scale — or, with a scale per 32 activation columns (Whole: one segment
// per block), the block's vpdpbusd chained in int32 and one convert and
// multiply per block. Per block the 16 rows' scales (and offsets, against the token's u)
// fold the block into the accumulators: no reduction across lanes, and one
// weight vector serves TT tokens.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized"; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "kernels/interleaved_linear.h"
#include "kernels/interleaved_unpack_avx512.h"
#include "kernels/interleaved_walk.h"

#define TESSERA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c")))

namespace tessera::kernels {

namespace {

using avx512::load16;
using avx512::unpack_group;

constexpr int kPrefetchVectors = 48;  // 1 KB ahead of a row group's weight stream

// Fm: the weight's form (kernels/interleaved_walk.h); Whole: every block
// is one segment (kernels/interleaved_linear.h).
template <class Fm, bool Start, bool Whole>
struct Tile {
  static constexpr bool B4 = Fm::B4, Lookup = Fm::Lookup, F32 = Fm::F32, Off = Fm::Off;
  static constexpr int PB = Fm::PB;
  const InterleavedWeights& w;
  const float* bias;

  template <int RG, int TT>
  TESSERA_AVX512 void operator()(std::integral_constant<int, RG>, std::integral_constant<int, TT>, int64_t g,
                                 const TokenBlock<TT>& tk) const {
    const __m512i table = _mm512_load_si512(w.table());
    const __m512i* wd[RG];
    for (int r = 0; r < RG; ++r) wd[r] = reinterpret_cast<const __m512i*>(w.group_data(g + r));
    __m512 acc[RG][TT];
    for (int r = 0; r < RG; ++r)
      for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t blocks = w.blocks();
    for (int64_t b = 0; b < blocks; ++b) {
      __m512 part[RG][TT];
      __m512i d[RG][TT];  // Whole: the block's int32 sums
#pragma GCC unroll 4
      for (int kk = 0; kk < PB; ++kk) {
        const int64_t k = b * PB + kk;
        __m512i w0[RG], w1[RG];
        for (int r = 0; r < RG; ++r) {
          // Each row group's weights are one sequential stream: fetch a
          // kilobyte ahead of it (decode reads them from memory).
          const int64_t at = B4 ? Fm::nibble_vector(k) : 2 * k;
          if (kPrefetchVectors > 0)
            _mm_prefetch(reinterpret_cast<const char*>(wd[r] + at + kPrefetchVectors), _MM_HINT_T0);
          // Every line of the stream: 8-bit codes take two vectors a group, 5 / 6 bits a plane vector a unit.
          if (kPrefetchVectors > 0 && (!B4 || (Fm::HB > 0 && kk % Fm::Unit == 0)))
            _mm_prefetch(reinterpret_cast<const char*>(wd[r] + (B4 ? Fm::plane_vector(k) : at + 1) + kPrefetchVectors),
                         _MM_HINT_T0);
          unpack_group<Fm>(wd[r], k, table, w0[r], w1[r]);
        }
#pragma GCC unroll 8
        for (int t = 0; t < TT; ++t) {
          const __m512i a0 = _mm512_set1_epi32(tk.q4[t][2 * k]), a1 = _mm512_set1_epi32(tk.q4[t][2 * k + 1]);
          if constexpr (Whole) {
            for (int r = 0; r < RG; ++r) {
              const __m512i from = kk > 0 ? d[r][t] : Start ? _mm512_set1_epi32(tk.start[t][b]) : _mm512_setzero_si512();
              d[r][t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(from, w0[r], a0), w1[r], a1);
            }
          } else {
            const __m512i start = Start ? _mm512_set1_epi32(tk.start[t][k]) : _mm512_setzero_si512();
            const __m512 s = _mm512_set1_ps(tk.s[t][k]);
            for (int r = 0; r < RG; ++r) {
              __m512i dk = _mm512_dpbusd_epi32(start, w0[r], a0);
              dk = _mm512_dpbusd_epi32(dk, w1[r], a1);
              const __m512 f = _mm512_cvtepi32_ps(dk);
              part[r][t] = kk == 0 ? _mm512_mul_ps(f, s) : _mm512_fmadd_ps(f, s, part[r][t]);
            }
          }
        }
      }
      if constexpr (Whole)
        for (int t = 0; t < TT; ++t) {
          const __m512 s = _mm512_set1_ps(tk.s[t][b]);
          for (int r = 0; r < RG; ++r) part[r][t] = _mm512_mul_ps(_mm512_cvtepi32_ps(d[r][t]), s);
        }
      for (int r = 0; r < RG; ++r) {
        const __m512 ws = load16<Fm>(w.group_scales(g + r, b), Fm::Super ? w.group_scale_multipliers(g + r, b) : nullptr);
        for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_fmadd_ps(ws, part[r][t], acc[r][t]);
        if constexpr (Off) {
          const __m512 wo =
              load16<Fm>(w.group_offsets(g + r, b), Fm::Super ? w.group_offset_multipliers(g + r, b) : nullptr);
          for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_fmadd_ps(wo, _mm512_set1_ps(tk.u[t][b]), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < RG; ++r) {
      const int64_t n0 = (g + r) * kInterleavedRows;
      const int64_t valid = std::min<int64_t>(kInterleavedRows, w.rows() - n0);
      const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1);
      const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + n0) : _mm512_setzero_ps();
      for (int t = 0; t < TT; ++t) {
        const __m512 out = bias ? _mm512_add_ps(acc[r][t], bv) : acc[r][t];
        _mm512_mask_storeu_ps(tk.y[t] + n0, m, out);
      }
    }
  }
};

}  // namespace

void interleaved_linear_avx512(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                               int64_t g_begin, int64_t g_end, float* y, int64_t ldy, int64_t t_begin) {
  with_form(w, [&](auto form) {
    using Fm = decltype(form);
    auto go = [&](auto tile) { interleaved_walk<8, 8, 2>(w, acts, g_begin, g_end, y, ldy, tile, t_begin); };
    // The dot's starting value −weight_offset · Σq is 0 for unsigned values
    // (Q4_1, Q4_K, Q5_1, Q5_K: the codes themselves).
    auto start = [&](auto whole) {
      constexpr bool W = decltype(whole)::value;
      if (w.weight_offset() == 0) go(Tile<Fm, false, W>{w, bias});
      else go(Tile<Fm, true, W>{w, bias});
    };
    if (whole_block_segments(w, acts)) start(std::true_type{});
    else start(std::false_type{});
  });
}

}  // namespace tessera::kernels

// AVX-512 (VNNI) interleaved linear; contract and layout in
// kernels/interleaved_linear.h.
//
// Per 8-column group of RG row groups: the weights of 16 rows × 8 columns
// as two vectors (blk8: two loads; blk4: one load, its low and high nibbles
// masked apart and, unless the codes are the values, looked up in the
// biased table with vpshufb), then per token two vpdpbusd against the
// token's two 4-byte activation words broadcast, starting from
// −weight_offset · Σq, a convert and one multiply-add with the group's
// scale. Per block the 16 rows' scales (and offsets, against the token's u)
// fold the block into the accumulators: no reduction across lanes, and one
// weight vector serves TT tokens.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized"; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "kernels/interleaved_linear.h"
#include "kernels/interleaved_walk.h"

#define TESSERA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c")))

namespace tessera::kernels {

namespace {

template <bool F32>
TESSERA_AVX512 inline __m512 load16(const uint8_t* p) {
  if constexpr (F32) return _mm512_load_ps(reinterpret_cast<const float*>(p));
  else return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// B4: blk4 codes (Lookup: through the table); PB: 8-column groups per block;
// F32: block parameters stored as f32 (else f16); Off: blocks have offsets.
template <bool B4, bool Lookup, int PB, bool F32, bool Off, bool Start>
struct Tile {
  static constexpr bool kF32 = F32, kOff = Off;
  const InterleavedWeights& w;
  const float* bias;

  template <int RG, int TT>
  TESSERA_AVX512 void operator()(std::integral_constant<int, RG>, std::integral_constant<int, TT>, int64_t g,
                                 const TokenBlock<TT>& tk) const {
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const __m512i table = _mm512_load_si512(w.table());
    const __m512i* wd[RG];
    for (int r = 0; r < RG; ++r) wd[r] = reinterpret_cast<const __m512i*>(w.group_data(g + r));
    __m512 acc[RG][TT];
    for (int r = 0; r < RG; ++r)
      for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t blocks = w.blocks();
    for (int64_t b = 0; b < blocks; ++b) {
      __m512 part[RG][TT];
#pragma GCC unroll 4
      for (int kk = 0; kk < PB; ++kk) {
        const int64_t k = b * PB + kk;
        __m512i w0[RG], w1[RG];
        for (int r = 0; r < RG; ++r) {
          if constexpr (B4) {
            const __m512i v = _mm512_load_si512(wd[r] + k);
            w0[r] = _mm512_and_si512(v, nibble);
            w1[r] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
            if constexpr (Lookup) {
              w0[r] = _mm512_shuffle_epi8(table, w0[r]);
              w1[r] = _mm512_shuffle_epi8(table, w1[r]);
            }
          } else {
            w0[r] = _mm512_load_si512(wd[r] + 2 * k);
            w1[r] = _mm512_load_si512(wd[r] + 2 * k + 1);
          }
        }
#pragma GCC unroll 8
        for (int t = 0; t < TT; ++t) {
          const __m512i a0 = _mm512_set1_epi32(tk.q4[t][2 * k]), a1 = _mm512_set1_epi32(tk.q4[t][2 * k + 1]);
          const __m512i start = Start ? _mm512_set1_epi32(tk.start[t][k]) : _mm512_setzero_si512();
          const __m512 s = _mm512_set1_ps(tk.s[t][k]);
          for (int r = 0; r < RG; ++r) {
            __m512i d = _mm512_dpbusd_epi32(start, w0[r], a0);
            d = _mm512_dpbusd_epi32(d, w1[r], a1);
            const __m512 f = _mm512_cvtepi32_ps(d);
            part[r][t] = kk == 0 ? _mm512_mul_ps(f, s) : _mm512_fmadd_ps(f, s, part[r][t]);
          }
        }
      }
      for (int r = 0; r < RG; ++r) {
        const __m512 ws = load16<F32>(w.group_scales(g + r, b));
        for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_fmadd_ps(ws, part[r][t], acc[r][t]);
        if constexpr (Off) {
          const __m512 wo = load16<F32>(w.group_offsets(g + r, b));
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

// ---- AMX: the same int32 group sums from int8 tiles (Isa::Amx) ----
//
// Per row group, 16 tokens and block: for each of the block's PB 8-column
// groups, TDPBSUD of A (16 tokens × 8 activation bytes, signed) and B (the
// group's two 64-byte weight vectors as 2 × 64 bytes, unsigned: 16 rows ×
// 4 bytes each) into C (16 tokens × 16 rows, int32): exactly Σ q · u per
// token and row. C goes through memory to the vector unit, which adds the
// starting value and applies the scales in the contract's order, so the
// bits are the vector kernels'. Tiles: C0..C3 = tmm0..3, A = tmm4/5, B =
// tmm6/7 (alternating, so consecutive groups' loads overlap).
#define TILE_LOAD(tmm, base, stride) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #tmm ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define TILE_STORE(tmm, base, stride) \
  asm volatile("tilestored %%tmm" #tmm ", (%0,%1,1)" ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define TILE_ZERO(tmm) asm volatile("tilezero %%tmm" #tmm ::)
// C += A · B, A signed and B unsigned bytes (AT&T operand order: B, A, C).
#define TILE_DPBSUD(c, a, b) asm volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void load_int8_tile_config() {
  TileConfig cfg;
  for (int i = 0; i < 4; ++i) cfg.colsb[i] = 64, cfg.rows[i] = 16;  // C: 16 tokens × 16 int32
  for (int i = 4; i < 6; ++i) cfg.colsb[i] = 8, cfg.rows[i] = 16;   // A: 16 tokens × 8 bytes
  for (int i = 6; i < 8; ++i) cfg.colsb[i] = 64, cfg.rows[i] = 2;   // B: 2 × (16 rows × 4 bytes)
  asm volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
}

template <int kk>
inline void group_product(const int8_t* a, int64_t a_stride, const uint8_t* b) {
  if constexpr (kk % 2 == 0) {
    TILE_LOAD(4, a, a_stride);
    TILE_LOAD(6, b, 64);
  } else {
    TILE_LOAD(5, a, a_stride);
    TILE_LOAD(7, b, 64);
  }
  if constexpr (kk == 0) {
    TILE_ZERO(0);
    TILE_DPBSUD(0, 4, 6);
  }
  if constexpr (kk == 1) {
    TILE_ZERO(1);
    TILE_DPBSUD(1, 5, 7);
  }
  if constexpr (kk == 2) {
    TILE_ZERO(2);
    TILE_DPBSUD(2, 4, 6);
  }
  if constexpr (kk == 3) {
    TILE_ZERO(3);
    TILE_DPBSUD(3, 5, 7);
  }
}

template <bool B4, bool Lookup, int PB, bool F32, bool Off, bool Start>
TESSERA_AVX512 void amx_row_group(const InterleavedWeights& w, const Int8Activations& acts, const TokenTerms& terms,
                                  int64_t t0, int64_t g, const float* bias, float* y, int64_t ldy) {
  static_assert(PB == 2 || PB == 4);
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i table = _mm512_load_si512(w.table());
  alignas(64) uint8_t unpacked[PB][128];
  alignas(64) int32_t c[PB][16][16];
  const uint8_t* wd = w.group_data(g);
  const int8_t* a = acts.q_row(t0);
  const int64_t a_stride = acts.row_bytes(), G = terms.groups;
  __m512 acc[16];
  for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.blocks(); ++b) {
    const uint8_t* bsrc[PB];
    for (int kk = 0; kk < PB; ++kk) {
      const int64_t k = b * PB + kk;
      if constexpr (B4) {
        const __m512i v = _mm512_load_si512(wd + 64 * k);
        __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
        if constexpr (Lookup) {
          lo = _mm512_shuffle_epi8(table, lo);
          hi = _mm512_shuffle_epi8(table, hi);
        }
        _mm512_store_si512(unpacked[kk], lo);
        _mm512_store_si512(unpacked[kk] + 64, hi);
        bsrc[kk] = unpacked[kk];
      } else {
        bsrc[kk] = wd + 128 * k;
      }
    }
    group_product<0>(a + 8 * (b * PB), a_stride, bsrc[0]);
    group_product<1>(a + 8 * (b * PB + 1), a_stride, bsrc[1]);
    if constexpr (PB == 4) {
      group_product<2>(a + 8 * (b * PB + 2), a_stride, bsrc[2]);
      group_product<3>(a + 8 * (b * PB + 3), a_stride, bsrc[3]);
    }
    TILE_STORE(0, &c[0][0][0], 64);
    TILE_STORE(1, &c[1][0][0], 64);
    if constexpr (PB == 4) {
      TILE_STORE(2, &c[2][0][0], 64);
      TILE_STORE(3, &c[3][0][0], 64);
    }
    const __m512 ws = load16<F32>(w.group_scales(g, b));
    const __m512 wo = Off ? load16<F32>(w.group_offsets(g, b)) : _mm512_setzero_ps();
    for (int t = 0; t < 16; ++t) {
      const float* s = terms.s.data() + t * G + b * PB;
      const int32_t* st = terms.start.data() + t * G + b * PB;
      __m512 part;
      for (int kk = 0; kk < PB; ++kk) {
        __m512i d = _mm512_load_si512(c[kk][t]);
        if constexpr (Start) d = _mm512_add_epi32(d, _mm512_set1_epi32(st[kk]));
        const __m512 f = _mm512_cvtepi32_ps(d);
        part = kk == 0 ? _mm512_mul_ps(f, _mm512_set1_ps(s[kk])) : _mm512_fmadd_ps(f, _mm512_set1_ps(s[kk]), part);
      }
      acc[t] = _mm512_fmadd_ps(ws, part, acc[t]);
      if constexpr (Off) acc[t] = _mm512_fmadd_ps(wo, _mm512_set1_ps(terms.u[t * terms.blocks + b]), acc[t]);
    }
  }
  const int64_t n0 = g * kInterleavedRows;
  const int64_t valid = std::min<int64_t>(kInterleavedRows, w.rows() - n0);
  const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + n0) : _mm512_setzero_ps();
  for (int t = 0; t < 16; ++t)
    _mm512_mask_storeu_ps(y + (t0 + t) * ldy + n0, m, bias ? _mm512_add_ps(acc[t], bv) : acc[t]);
}

// Whole tiles of 16 tokens on AMX; returns the first token left to the vector kernel.
template <bool B4, bool Lookup, int PB, bool F32, bool Off, bool Start>
int64_t amx_tiles(const InterleavedWeights& w, const Int8Activations& acts, const float* bias, int64_t g_begin,
                  int64_t g_end, float* y, int64_t ldy) {
  const int64_t tiles = acts.rows / 16;
  if (tiles == 0) return 0;
  thread_local TokenTerms terms;
  load_int8_tile_config();
  for (int64_t i = 0; i < tiles; ++i) {
    terms.build(w, acts, 16 * i, 16 * i + 16);
    for (int64_t g = g_begin; g < g_end; ++g)
      amx_row_group<B4, Lookup, PB, F32, Off, Start>(w, acts, terms, 16 * i, g, bias, y, ldy);
  }
  asm volatile("tilerelease" ::: "memory");
  return 16 * tiles;
}

thread_local bool use_amx = false;  // set per call by interleaved_linear_avx512 / _amx

template <bool B4, bool Lookup, int PB, bool Start>
void with_storage(const InterleavedWeights& w, const Int8Activations& acts, const float* bias, int64_t g_begin,
                  int64_t g_end, float* y, int64_t ldy) {
  auto go = [&](auto tile) {
    int64_t t_begin = 0;
    if (use_amx) {
      using T = decltype(tile);
      t_begin = amx_tiles<B4, Lookup, PB, T::kF32, T::kOff, Start>(w, acts, bias, g_begin, g_end, y, ldy);
    }
    if (t_begin < acts.rows) interleaved_walk<4, 8, 4>(w, acts, g_begin, g_end, y, ldy, tile, t_begin);
  };
  if (w.block_f32()) {
    if (w.block_offsets()) go(Tile<B4, Lookup, PB, true, true, Start>{w, bias});
    else go(Tile<B4, Lookup, PB, true, false, Start>{w, bias});
  } else {
    if (w.block_offsets()) go(Tile<B4, Lookup, PB, false, true, Start>{w, bias});
    else go(Tile<B4, Lookup, PB, false, false, Start>{w, bias});
  }
}

}  // namespace

void interleaved_linear_amx(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                            int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  use_amx = true;
  interleaved_linear_avx512(w, acts, bias, g_begin, g_end, y, ldy);
  use_amx = false;
}

void interleaved_linear_avx512(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                               int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  // The dot's starting value −weight_offset · Σq is 0 for unsigned values
  // (Q4_1, Q4_K: the codes themselves).
  if (w.blk4()) {
    if (w.identity_table() && w.weight_offset() == 0) with_storage<true, false, 4, false>(w, acts, bias, g_begin, g_end, y, ldy);
    else if (w.identity_table()) with_storage<true, false, 4, true>(w, acts, bias, g_begin, g_end, y, ldy);
    else with_storage<true, true, 4, true>(w, acts, bias, g_begin, g_end, y, ldy);
  } else if (w.block_cols() == 16) {
    with_storage<false, false, 2, true>(w, acts, bias, g_begin, g_end, y, ldy);
  } else {
    with_storage<false, false, 4, true>(w, acts, bias, g_begin, g_end, y, ldy);
  }
}

}  // namespace tessera::kernels

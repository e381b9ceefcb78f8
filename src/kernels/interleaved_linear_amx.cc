// AMX int8 interleaved linear for prefill, batched steps and verification;
// contract and layout in kernels/interleaved_linear.h.
//
// With a scale per 32 activation columns every weight block is one segment,
// so a block's exact int32 sums d[t, n] for 16 tokens × 16 rows are one
// tile product: TDPBSUD of A (16 tokens × the block's B_c int8 activation
// bytes, read in place from the quantized rows) and B (the row group's
// B_c / 4 weight vectors: byte 4r+i of vector j is row r's u at column
// 4j+i, which is the layout's own order, so 8-bit codes load in place and
// 4- to 6-bit ones are unpacked once per row group and chunk of token tiles
// into a scratch copy). TDPBSUD multiplies signed A bytes by unsigned B
// bytes, so C holds Σ q·u, and adding −weight_offset · Σq gives d as the
// vector kernels' dot does. Each C row (one token's 16 rows) then goes
// through the contract's f32 steps in the same order as the AVX-512
// kernel: convert, times the token's block scale, fma with the rows' block
// scales (and offsets) into the token's accumulator, so every output has
// the vector kernels' bits. Blocks go in pairs (tiles: C0, C1 = tmm0/1;
// A0, A1 = tmm4/5; B0, B1 = tmm6/7). Tokens past the last whole tile take
// the AVX-512 kernel.
//
// Cost (docs/BENCHMARKING.md): per block and token tile the tile work
// alone runs at about 725 GMAC/s per thread here and the fold alone at
// about 510; they do not overlap (pipelining the next blocks' products
// behind the fold did not pay, docs/REJECTED_APPROACHES.md), so the kernel
// runs at about 300, against 221 for the vpdpbusd kernel.
#include "kernels/interleaved_linear.h"

#include "core/error.h"

#if !TESSERA_X86
namespace tessera::kernels {
bool interleaved_amx_applies(const InterleavedWeights&, const Int8Activations&) { return false; }
void interleaved_linear_amx(const InterleavedWeights&, const Int8Activations&, const float*, int64_t, int64_t, float*,
                            int64_t) {
  fail("options", "isa", "the AMX kernel is not compiled into this build (best here: {})", isa_name(detected_isa()));
}
}  // namespace tessera::kernels
#else
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized"; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "core/aligned_vector.h"
#include "kernels/amx_tiles.h"
#include "kernels/interleaved_unpack_avx512.h"
#include "kernels/interleaved_walk.h"

#define TESSERA_AMX_HOST __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c")))

namespace tessera::kernels {

namespace {

constexpr int64_t kTileTokens = 16;
// Token tiles per pass over a row group's unpacked weights: the chunk's
// activations (8 × 16 rows) stay in L2 while the group's weights are
// unpacked once for all of them.
constexpr int64_t kChunkTiles = 4;

bool cpu_has_amx_int8() {
  static const bool yes = isa_supported(Isa::Amx) && __builtin_cpu_supports("amx-int8");
  return yes;
}

template <class Fm, bool Start>
struct Groups {
  const InterleavedWeights& w;
  const Int8Activations& acts;
  const TokenTerms& terms;  // every segment is a block: terms.segments == w.blocks()
  const float* bias;

  // The contract's f32 steps for block b of one token tile, from its C tile
  // (c[i]: token t0 + i's 16 rows) and the tile's terms of the block
  // (s, start, u: 16 values each, one per token).
  TESSERA_AMX_HOST inline void fold(const int32_t (*c)[16], int64_t g, int64_t b, const float* s, const int32_t* start,
                                    const float* u, __m512* acc) const {
    const __m512 ws = avx512::load16<Fm>(w.group_scales(g, b), Fm::Super ? w.group_scale_multipliers(g, b) : nullptr);
    __m512 wo = _mm512_setzero_ps();
    if constexpr (Fm::Off)
      wo = avx512::load16<Fm>(w.group_offsets(g, b), Fm::Super ? w.group_offset_multipliers(g, b) : nullptr);
#pragma GCC unroll 16
    for (int i = 0; i < kTileTokens; ++i) {
      __m512i d = _mm512_load_si512(c[i]);
      if constexpr (Start) d = _mm512_add_epi32(d, _mm512_set1_epi32(start[i]));
      const __m512 part = _mm512_mul_ps(_mm512_cvtepi32_ps(d), _mm512_set1_ps(s[i]));
      acc[i] = _mm512_fmadd_ps(ws, part, acc[i]);
      if constexpr (Fm::Off) acc[i] = _mm512_fmadd_ps(wo, _mm512_set1_ps(u[i]), acc[i]);
    }
  }

  TESSERA_AMX_HOST void operator()(int64_t g_begin, int64_t g_end, float* y, int64_t ldy, int64_t tiles) const {
    const int64_t bc = w.block_cols(), blocks = w.blocks(), cols = w.cols();
    const int64_t b_bytes = bc / 4 * 64;  // one block's B tile
    const int64_t lda = acts.row_bytes();
    thread_local AlignedVector<uint8_t> unpacked;
    if (Fm::B4 && unpacked.size() < static_cast<size_t>(cols * 16)) unpacked.resize(static_cast<size_t>(cols * 16));
    const __m512i table = _mm512_load_si512(w.table());
    alignas(64) int32_t c[2][16][16];
    // The chunk's token terms, block-major per tile ([tile][block][token]),
    // so a fold reads each block's 16 values from one place.
    thread_local AlignedVector<float> s_tiles, u_tiles;
    thread_local AlignedVector<int32_t> start_tiles;
    const size_t chunk_terms = static_cast<size_t>(kChunkTiles * blocks * kTileTokens);
    if (s_tiles.size() < chunk_terms) {
      s_tiles.resize(chunk_terms);
      u_tiles.resize(chunk_terms);
      start_tiles.resize(chunk_terms);
    }
    for (int64_t tc = 0; tc < tiles; tc += kChunkTiles) {
      const int64_t tc_end = std::min(tiles, tc + kChunkTiles);
      for (int64_t tile = tc; tile < tc_end; ++tile)
        for (int64_t i = 0; i < kTileTokens; ++i) {
          const int64_t t = tile * kTileTokens + i;
          for (int64_t b = 0; b < blocks; ++b) {
            const size_t at = static_cast<size_t>(((tile - tc) * blocks + b) * kTileTokens + i);
            s_tiles[at] = terms.s[t * terms.segments + b];
            start_tiles[at] = terms.start[t * terms.segments + b];
            if (Fm::Off) u_tiles[at] = terms.u[t * terms.blocks + b];
          }
        }
      for (int64_t g = g_begin; g < g_end; ++g) {
        const uint8_t* bw = w.group_data(g);
        if constexpr (Fm::B4) {
          const auto* wd = reinterpret_cast<const __m512i*>(w.group_data(g));
          auto* out = reinterpret_cast<__m512i*>(unpacked.data());
          for (int64_t k = 0; k < cols / 8; ++k) {
            __m512i w0, w1;
            avx512::unpack_group<Fm>(wd, k, table, w0, w1);
            _mm512_store_si512(out + 2 * k, w0);
            _mm512_store_si512(out + 2 * k + 1, w1);
          }
          bw = unpacked.data();
        }
        const int64_t n0 = g * kInterleavedRows;
        const int64_t valid = std::min<int64_t>(kInterleavedRows, w.rows() - n0);
        const __mmask16 live = static_cast<__mmask16>((1u << valid) - 1);
        const __m512 bv = bias ? _mm512_maskz_loadu_ps(live, bias + n0) : _mm512_setzero_ps();
        for (int64_t tile = tc; tile < tc_end; ++tile) {
          const int64_t t0 = tile * kTileTokens;
          const int8_t* a = acts.q_row(t0);
          __m512 acc[kTileTokens];
          for (__m512& v : acc) v = _mm512_setzero_ps();
          const int64_t at = (tile - tc) * blocks * kTileTokens;
          const float* st = s_tiles.data() + at;
          const float* ut = u_tiles.data() + at;
          const int32_t* zt = start_tiles.data() + at;
          auto fold_block = [&](const int32_t (*cb)[16], int64_t b) {
            fold(cb, g, b, st + b * kTileTokens, zt + b * kTileTokens, ut + b * kTileTokens, acc);
          };

          int64_t b = 0;
          for (; b + 2 <= blocks; b += 2) {
            TILE_LOAD(4, a + b * bc, lda);
            TILE_LOAD(5, a + (b + 1) * bc, lda);
            TILE_LOAD(6, bw + b * b_bytes, 64);
            TILE_LOAD(7, bw + (b + 1) * b_bytes, 64);
            TILE_ZERO(0);
            TILE_ZERO(1);
            TILE_DPBSUD(0, 4, 6);
            TILE_DPBSUD(1, 5, 7);
            TILE_STORE(0, &c[0][0][0], 64);
            TILE_STORE(1, &c[1][0][0], 64);
            fold_block(c[0], b);
            fold_block(c[1], b + 1);
          }
          if (b < blocks) {
            TILE_LOAD(4, a + b * bc, lda);
            TILE_LOAD(6, bw + b * b_bytes, 64);
            TILE_ZERO(0);
            TILE_DPBSUD(0, 4, 6);
            TILE_STORE(0, &c[0][0][0], 64);
            fold_block(c[0], b);
          }
          for (int i = 0; i < kTileTokens; ++i)
            _mm512_mask_storeu_ps(y + (t0 + i) * ldy + n0, live, bias ? _mm512_add_ps(acc[i], bv) : acc[i]);
        }
      }
    }
  }
};

}  // namespace

bool interleaved_amx_applies(const InterleavedWeights& w, const Int8Activations& acts) {
  return acts.rows >= kTileTokens && (w.block_cols() == 16 || w.block_cols() == 32) &&
         whole_block_segments(w, acts) && cpu_has_amx_int8();
}

void interleaved_linear_amx(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                            int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  if (!interleaved_amx_applies(w, acts))
    fail("", "interleaved linear", "the AMX kernel needs amx-int8, 16+ tokens and activation blocks of whole weight blocks");
  const int64_t tiles = acts.rows / kTileTokens;
  if (g_begin < g_end) {
    const TokenTerms& terms = call_terms(w, acts);
    const int bc = static_cast<int>(w.block_cols());
    TileConfig cfg;
    for (int i = 0; i < 2; ++i) cfg.set(i, 16, 64);  // C
    cfg.set(4, 16, bc);                               // A
    cfg.set(5, 16, bc);
    cfg.set(6, bc / 4, 64);                           // B
    cfg.set(7, bc / 4, 64);
    cfg.load();
    with_form(w, [&](auto form) {
      using Fm = decltype(form);
      if (w.weight_offset() == 0) Groups<Fm, false>{w, acts, terms, bias}(g_begin, g_end, y, ldy, tiles);
      else Groups<Fm, true>{w, acts, terms, bias}(g_begin, g_end, y, ldy, tiles);
    });
    TILE_RELEASE();
  }
  if (tiles * kTileTokens < acts.rows)
    interleaved_linear_avx512(w, acts, bias, g_begin, g_end, y, ldy, tiles * kTileTokens);
}

}  // namespace tessera::kernels
#endif  // TESSERA_X86

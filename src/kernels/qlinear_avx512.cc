// AVX-512 (VNNI + VBMI) integer-dot linear kernels; contract in kernels/qlinear.h.
//
// lut4, per 64 bytes of a row's packed indices (128 weights):
//   vpermb looks the 16-entry palette up for the low nibbles and, after a
//   16-bit shift by 4, for the high nibbles (the 64-byte table repeats the
//   16 entries, so the stray bits 4-5 of each shifted byte select the same
//   entry and no mask is needed); the table is biased by +128 so the looked
//   up bytes are unsigned, and vpdpbusd multiplies them with the int8
//   activations (even columns against the low nibbles, odd against the high)
//   into 16 int32 lanes that start from the activations' -128·Σq correction,
//   leaving the exact signed sums. One cvt + FMA per chunk applies the
//   activation scales. Each looked-up vector is multiplied with both
//   activation passes (x and its residual, kernels/int8_activations.h).
// int8: the weight bytes are biased by +128 (xor 0x80) and go through the
//   same vpdpbusd + correction, 64 weights per step.
// lut3 / lut2, per 16·bits index bytes (128 weights): unpacked into the
//   table's biased bytes as two vectors, each block's first 4 columns and
//   its last 4 (kernels/lut_unpack_avx512.h), against the BlockHalves
//   activations: the same two vpdpbusd and one cvt + FMA per chunk as lut4.
// blk4 / blk8 (a quantized GGUF's own values): the same steps over the
//   codes (blk4: lut4's with the tensor's codebook as the table; blk8:
//   int8's), then per chunk the activation scales form t and the blocks'
//   scales (and offsets, against the lanes' Σq) are applied per lane: K
//   block values per chunk, loaded (f16 converted) and spread over the 16
//   lanes with one vpermps.
// Rows are processed eight at a time (then 4, 2, 1) so the activation
// vectors are loaded once per eight rows and eight independent accumulator
// chains hide the dot products' latency (four rows: 12.6 GB/s on 576-column
// lut4 rows in L2 on Zen 4, eight: 14-19; docs/BENCHMARKING.md); a block of
// rows is contiguous, so the weight bytes are read as one sequential stream,
// with software prefetch of every line ahead of it.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized" inside vpermb / masked loads; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/aligned_vector.h"
#include "kernels/lane_reduce.h"
#include "kernels/lut_unpack_avx512.h"
#include "kernels/qlinear.h"

#define TESSERA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,f16c")))

namespace tessera::kernels {

namespace {

constexpr int kPrefetchL1 = 1024;  // bytes ahead of the current load
constexpr int kPrefetchL2 = 8192;

// Rows n .. n + R - 1's outputs from their lanes (qlinear_output of each
// row's reduce_lanes16); eight rows reduce together.
template <int R>
TESSERA_AVX512 inline void finish(const __m512 (&acc)[R], const QLinearWeights& w, const float* bias, int64_t n,
                                  float* y) {
  if constexpr (R == 8) {
    __m256 out = _mm256_mul_ps(reduce_lanes16x8_avx512(acc), _mm256_loadu_ps(w.out_scale_data() + n));
    if (bias) out = _mm256_add_ps(out, _mm256_loadu_ps(bias + n));
    _mm256_storeu_ps(y + n, out);
  } else {
    for (int r = 0; r < R; ++r) y[n + r] = qlinear_output(reduce_lanes16_avx512(acc[r]), w.out_scale(n + r), bias, n + r);
  }
}

// The high nibbles of a lut4 chunk are brought down with vpmultishiftqb (byte
// i of each quadword takes bits 8i+4 .. 8i+11), which runs beside vpermb
// rather than on the port the dot products need, unlike a shift.
TESSERA_AVX512 inline __m512i high_nibbles(__m512i v) {
  const __m512i ctl = _mm512_set1_epi64(0x3c342c241c140c04LL);  // 60, 52, 44, 36, 28, 20, 12, 4
  return _mm512_multishift_epi64_epi8(ctl, v);
}

// Per-block weight scales (blk4 / blk8, kernels/qlinear.h): K blocks per
// chunk (0: none, the per-row formats), stored as f32 (F) or f16, with
// offsets (O) or without.
template <int K, bool F, bool O>
struct Blocks {
  static constexpr int k = K;
  static constexpr bool f32 = F, offsets = O;
  static constexpr int64_t bytes = K * (F ? 4 : 2);  // one chunk's values per row
};
using NoBlocks = Blocks<0, false, false>;

// The first V of a chunk's K block values at p spread over the 16 lanes
// (lane j takes value j·K/16; values past V are 0: the lanes past a row's
// end in its last half chunk).
template <int K, int V, bool F>
TESSERA_AVX512 inline __m512 lane_values(const uint8_t* p) {
  static_assert((K == 2 || K == 4) && (V == 2 || V == 4) && V <= K);
  __m128 v;
  if constexpr (F) {
    v = V == 4 ? _mm_loadu_ps(reinterpret_cast<const float*>(p))
               : _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p)));
  } else {
    uint32_t lo, hi = 0;
    std::memcpy(&lo, p, 4);
    if constexpr (V == 4) std::memcpy(&hi, p + 4, 4);
    v = _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(hi), static_cast<int>(lo)));
  }
  const __m512i idx = K == 4 ? _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0)
                             : _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}

// A chunk's activations, every pass: even / odd columns, corrections, scales;
// for blocks with offsets, u = Σ_p s_p · (lane's Σq of pass p).
template <int P>
struct ChunkActs {
  __m512i lo[P], hi[P], b[P];
  __m512 s[P];
  __m512 u;
};

// u of a chunk's passes: bias16 = −128·Σq, so Σq = bias16 · (−1/128) exactly.
template <int P>
TESSERA_AVX512 inline __m512 lane_act_sums(const __m512i (&b)[P], const __m512 (&s)[P]) {
  const __m512 k = _mm512_set1_ps(-1.0f / 128.0f);
  __m512 u = _mm512_mul_ps(s[0], _mm512_mul_ps(_mm512_cvtepi32_ps(b[0]), k));
  for (int p = 1; p < P; ++p) u = _mm512_fmadd_ps(s[p], _mm512_mul_ps(_mm512_cvtepi32_ps(b[p]), k), u);
  return u;
}

// The exact lane sums d[p] of every pass into acc: per pass one FMA with the
// activation scales, or (blocked) t from the passes, then the block scale
// ws and offset wo.
template <int P, class Bk>
TESSERA_AVX512 inline __m512 apply_passes(const __m512i (&d)[P], const __m512 (&s)[P], __m512 acc, __m512 ws,
                                         __m512 wo, __m512 u) {
  if constexpr (Bk::k == 0) {
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d[p]), s[p], acc);
    return acc;
  } else {
    __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(d[0]), s[0]);
    for (int p = 1; p < P; ++p) t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d[p]), s[p], t);
    acc = _mm512_fmadd_ps(ws, t, acc);
    if constexpr (Bk::offsets) acc = _mm512_fmadd_ps(wo, u, acc);
    return acc;
  }
}

// One 128-column chunk of a row's two looked-up weight vectors (lut4: low /
// high nibbles, against the Lut4Pairs activations; lut3 / lut2: first / second
// block halves, against BlockHalves) with every pass.
template <int P, class Bk>
TESSERA_AVX512 inline __m512 pair_step(__m512i lo, __m512i hi, const ChunkActs<P>& a, __m512 acc, __m512 ws,
                                       __m512 wo) {
  __m512i d[P];
#pragma GCC unroll 2
  for (int p = 0; p < P; ++p) d[p] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(a.b[p], lo, a.lo[p]), hi, a.hi[p]);
  return apply_passes<P, Bk>(d, a.s, acc, ws, wo, a.u);
}

// Row n's block scales and offsets of chunk m as lane values (zeros for the
// per-row formats); V of the chunk's K values are in the row.
template <class Bk, int V = Bk::k>
TESSERA_AVX512 inline void block_lanes(const QLinearWeights& w, int64_t n, int64_t m, __m512& ws, __m512& wo) {
  if constexpr (Bk::k == 0) {
    ws = wo = _mm512_setzero_ps();
  } else {
    ws = lane_values<Bk::k, V, Bk::f32>(w.block_scales(n) + Bk::bytes * m);
    wo = Bk::offsets ? lane_values<Bk::k, V, Bk::f32>(w.block_offsets(n) + Bk::bytes * m) : _mm512_setzero_ps();
  }
}

// The two weight vectors of the 128 columns whose 16·B index bytes start at
// p (`bytes` masks what to read: all of them, or the 8·B of a row's last 64
// columns); tbl: the row's table biased by +128.
template <int B>
TESSERA_AVX512 inline void unpack_pair(const uint8_t* p, __mmask64 bytes, __m512i tbl, __m512i& lo, __m512i& hi) {
  if constexpr (B == 4) {
    const __m512i v = bytes == ~__mmask64{0} ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(bytes, p);
    lo = _mm512_permutexvar_epi8(v, tbl);
    hi = _mm512_permutexvar_epi8(high_nibbles(v), tbl);
  } else {
    unpack_lut128_halves<B>(p, bytes, tbl, lo, hi);
  }
}

// Prefetches the bytes kPrefetchL1 (into L1) and kPrefetchL2 (into L2) ahead
// of [p, p + bytes), one line at a time: a row block's bytes are contiguous,
// so consecutive blocks prefetch every line of the stream once. (Prefetching
// per row and chunk, at a row's chunk address plus a distance, misses lines
// wherever rows are not a multiple of 64 bytes long: 4 of every 18 for
// 576-column lut4 rows.)
inline void prefetch_ahead(const uint8_t* p, int64_t begin, int64_t end) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t off = begin; off < end; off += 64) {
    _mm_prefetch(c + off + kPrefetchL1, _MM_HINT_T0);
    _mm_prefetch(c + off + kPrefetchL2, _MM_HINT_T1);
  }
}

constexpr __mmask64 first_bytes(int n) { return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1; }

// Rows of a lut weight (B bits per index) against the two-vector layouts
// (blk4: B = 4 with its blocks Bk).
template <int R, int P, int B, class Bk = NoBlocks>
TESSERA_AVX512 void lut_rows(const QLinearWeights& w, const Int8Activations& a, int64_t t, int64_t n,
                             const float* bias, float* y) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  // Loads chunk m's activations of every pass.
  auto chunk = [&](int64_t m) TESSERA_AVX512 {
    ChunkActs<P> c;
    for (int p = 0; p < P; ++p) {
      const int8_t* q = a.q_row(t, p);
      c.lo[p] = _mm512_loadu_si512(q + 128 * m);
      c.hi[p] = _mm512_loadu_si512(q + 128 * m + 64);
      c.b[p] = _mm512_loadu_si512(a.bias_row(t, p) + 16 * m);
      c.s[p] = _mm512_loadu_ps(a.scale_row(t, p) + 16 * m);
    }
    c.u = Bk::offsets ? lane_act_sums<P>(c.b, c.s) : _mm512_setzero_ps();
    return c;
  };
  constexpr int64_t kChunkBytes = 16 * B;  // index bytes per 128 columns
  __m512i tbl[R];
  __m512 acc[R];
  const uint8_t* row0 = w.row(n);
  const int64_t rb = w.row_bytes();
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    tbl[r] = _mm512_xor_si512(_mm512_loadu_si512(w.table(n + r)), flip);
    acc[r] = _mm512_setzero_ps();
  }
  const int64_t full = w.cols() / 128;
  // The block's lines ahead, spread over its chunks (a few per chunk, not a burst).
  const int64_t span = R * rb, per = full > 0 ? (span / 64 + full) / full * 64 : span;
  if (full == 0) prefetch_ahead(row0, 0, span);
  for (int64_t m = 0; m < full; ++m) {
    prefetch_ahead(row0, m * per, std::min(span, (m + 1) * per));
    const ChunkActs<P> c = chunk(m);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = row0 + r * rb + kChunkBytes * m;
      __m512i lo, hi;
      unpack_pair<B>(p, first_bytes(kChunkBytes), tbl[r], lo, hi);
      __m512 ws, wo;
      block_lanes<Bk>(w, n + r, m, ws, wo);
      acc[r] = pair_step<P, Bk>(lo, hi, c, acc[r], ws, wo);
    }
  }
  if (w.cols() % 128 != 0) {  // the last 64 columns: half a chunk's index bytes
    const ChunkActs<P> c = chunk(full);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512i lo, hi;
      unpack_pair<B>(row0 + r * rb + kChunkBytes * full, first_bytes(kChunkBytes / 2), tbl[r], lo, hi);
      __m512 ws, wo;
      block_lanes<Bk, Bk::k / 2>(w, n + r, full, ws, wo);
      acc[r] = pair_step<P, Bk>(lo, hi, c, acc[r], ws, wo);
    }
  }
  finish<R>(acc, w, bias, n, y);
}

// int8 rows, 64 columns per step: the weight bytes biased by +128 (blk8:
// the same with its blocks Bk).
template <int R, int P, class Bk = NoBlocks>
TESSERA_AVX512 void int8_rows(const QLinearWeights& w, const Int8Activations& a, int64_t t, int64_t n,
                              const float* bias, float* y) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const uint8_t* row[R];
  __m512 acc[R];
  for (int r = 0; r < R; ++r) {
    row[r] = w.row(n + r);
    acc[r] = _mm512_setzero_ps();
  }
  const int64_t chunks = w.cols() / 64;
  for (int64_t m = 0; m < chunks; ++m) {
    __m512i av[P], b[P];
    __m512 s[P];
    for (int p = 0; p < P; ++p) {
      av[p] = _mm512_loadu_si512(a.q_row(t, p) + 64 * m);
      b[p] = _mm512_loadu_si512(a.bias_row(t, p) + 16 * m);
      s[p] = _mm512_loadu_ps(a.scale_row(t, p) + 16 * m);
    }
    const __m512 u = Bk::offsets ? lane_act_sums<P>(b, s) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = row[r] + 64 * m;
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchL1), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchL2), _MM_HINT_T1);
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(p), flip);
      __m512i d[P];
#pragma GCC unroll 2
      for (int k = 0; k < P; ++k) d[k] = _mm512_dpbusd_epi32(b[k], v, av[k]);
      __m512 ws, wo;
      block_lanes<Bk>(w, n + r, m, ws, wo);
      acc[r] = apply_passes<P, Bk>(d, s, acc[r], ws, wo, u);
    }
  }
  finish<R>(acc, w, bias, n, y);
}

// Calls of several tokens (prefill) on blocked weights: a block of R rows
// has its weight vectors (blk4: the looked-up codes; blk8: the bytes; both
// biased by +128) and its lane scales and offsets formed once, into `buf`,
// and then every token of the call streams them from L1 / L2, instead of
// redoing the lookups and block loads per token. Per token the operations
// are lut_rows' / int8_rows' own, so the bits are too.
template <int R, int P, int B, class Bk>
TESSERA_AVX512 void blocked_rows_all_tokens(const QLinearWeights& w, const Int8Activations& a, int64_t n,
                                            const float* bias, float* y, int64_t ldy, AlignedVector<__m512i>& buf) {
  constexpr int V = B == 4 ? 2 : 1;  // weight vectors per chunk
  constexpr int E = V + 2;           // then the lane scales and offsets
  const int64_t chunks = a.chunks, full = w.cols() / (B == 4 ? 128 : 64);
  buf.resize(static_cast<size_t>(R * chunks * E));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int r = 0; r < R; ++r) {
    const __m512i tbl = B == 4 ? _mm512_xor_si512(_mm512_loadu_si512(w.table(n + r)), flip) : _mm512_setzero_si512();
    for (int64_t m = 0; m < chunks; ++m) {
      __m512i* e = buf.data() + (r * chunks + m) * E;
      __m512 ws, wo;
      if constexpr (B == 4) {
        unpack_pair<4>(w.row(n + r) + 64 * m, first_bytes(m < full ? 64 : 32), tbl, e[0], e[1]);
      } else {
        e[0] = _mm512_xor_si512(_mm512_loadu_si512(w.row(n + r) + 64 * m), flip);
      }
      if constexpr (B == 4) {  // blk4 rows may end on half a chunk: its two blocks
        if (m == full) block_lanes<Bk, Bk::k / 2>(w, n + r, m, ws, wo);
        else block_lanes<Bk>(w, n + r, m, ws, wo);
      } else {
        block_lanes<Bk>(w, n + r, m, ws, wo);
      }
      e[V] = _mm512_castps_si512(ws);
      e[V + 1] = _mm512_castps_si512(wo);
    }
  }
  for (int64_t t = 0; t < a.rows; ++t) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t m = 0; m < chunks; ++m) {
      ChunkActs<P> c;
      for (int p = 0; p < P; ++p) {
        const int8_t* q = a.q_row(t, p);
        c.lo[p] = _mm512_loadu_si512(q + V * 64 * m);
        if constexpr (B == 4) c.hi[p] = _mm512_loadu_si512(q + 128 * m + 64);
        c.b[p] = _mm512_loadu_si512(a.bias_row(t, p) + 16 * m);
        c.s[p] = _mm512_loadu_ps(a.scale_row(t, p) + 16 * m);
      }
      c.u = Bk::offsets ? lane_act_sums<P>(c.b, c.s) : _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512i* e = buf.data() + (r * chunks + m) * E;
        const __m512 ws = _mm512_castsi512_ps(e[V]), wo = _mm512_castsi512_ps(e[V + 1]);
        if constexpr (B == 4) {
          acc[r] = pair_step<P, Bk>(e[0], e[1], c, acc[r], ws, wo);
        } else {
          __m512i d[P];
#pragma GCC unroll 2
          for (int p = 0; p < P; ++p) d[p] = _mm512_dpbusd_epi32(c.b[p], e[0], c.lo[p]);
          acc[r] = apply_passes<P, Bk>(d, c.s, acc[r], ws, wo, c.u);
        }
      }
    }
    finish<R>(acc, w, bias, n, y + t * ldy);
  }
}

}  // namespace

// Calls of fewer tokens on blocked weights stay on the per-token walk
// (lut_rows / int8_rows over each token): forming a row block's vectors
// into a buffer first costs about a decode step's unpacking, which a few
// tokens do not repay. Measured on the Zen 4 VM (busy host, 2 threads),
// greedy verify calls of k + 1 tokens against a decode step: SmolLM2
// k = 1 1.41 -> 1.16, k = 2 1.58 -> 1.37; Gemma 3 k = 1 1.87 -> 1.19,
// k = 2 2.40 -> 1.25; at 1 thread SmolLM2 k = 4 (5 tokens) 3.8 -> 3.5,
// k = 8 (9 tokens) 5.4 -> 6.2 (the buffered walk wins from there). Same
// bits either way (the operations per token are the same).
constexpr int64_t kBlockedBufferMinTokens = 6;
// blk8 has no lookup to save, only the block values' conversion, so its
// buffer pays from more tokens. Quiet Zen 4 host, 2 threads, verify calls
// of k drafts (ms, per-token walk for blk8 up to 32 tokens against the
// buffer from 6): Gemma 3 (blk8 head of 262,144 rows) k = 5 24.7-25.8
// against 32.8-33.3, k = 8 37.0-38.2 against 43.0-43.5, k = 11 53.3-54.4
// against 53.8-56.3, k = 16 69.9-73.2 against 67.4-67.8; SmolLM2 k = 5
// 16.8 against 18.0, k = 8 22.7 against 23.7, k = 16 38.5 both.
constexpr int64_t kBlockedBufferMinTokens8 = 12;

void qlinear_avx512(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                    int64_t n_end, float* y, int64_t ldy) {
  const int bits = w.bits();
  with_act_passes(acts, [&](auto passes) {
    constexpr int P = decltype(passes)::value;
    if (w.blocked() && acts.rows >= (bits == 8 ? kBlockedBufferMinTokens8 : kBlockedBufferMinTokens)) {
      thread_local AlignedVector<__m512i> buf;
      return with_blocks<Blocks, 4, 2>(w, [&](auto blocks) {
        using Bk = decltype(blocks);
        int64_t n = n_begin;
        auto block = [&](auto rows, int64_t, int64_t n0) {
          constexpr int R = decltype(rows)::value;
          if constexpr (Bk::k == 4)
            if (bits == 4) return blocked_rows_all_tokens<R, P, 4, Bk>(w, acts, n0, bias, y, ldy, buf);
          blocked_rows_all_tokens<R, P, 8, Bk>(w, acts, n0, bias, y, ldy, buf);
        };
        row_blocks_of<8>(0, 1, n, n_end, block);  // one call per row block: it runs every token
      });
    }
    // Each row has its own palette register, so any eight rows can go together.
    for_each_row_block<8>(acts.rows, n_begin, n_end, [&](auto rows, int64_t t, int64_t n) {
      constexpr int R = decltype(rows)::value;
      if (w.blocked())
        return with_blocks<Blocks, 4, 2>(w, [&](auto blocks) {
          using Bk = decltype(blocks);
          if constexpr (Bk::k == 4)  // blk4: four 32-column blocks per 128
            if (bits == 4) return lut_rows<R, P, 4, Bk>(w, acts, t, n, bias, y + t * ldy);
          int8_rows<R, P, Bk>(w, acts, t, n, bias, y + t * ldy);
        });
      switch (bits) {
        case 4: return lut_rows<R, P, 4>(w, acts, t, n, bias, y + t * ldy);
        case 3: return lut_rows<R, P, 3>(w, acts, t, n, bias, y + t * ldy);
        case 2: return lut_rows<R, P, 2>(w, acts, t, n, bias, y + t * ldy);
        default: return int8_rows<R, P>(w, acts, t, n, bias, y + t * ldy);
      }
    });
  });
}

}  // namespace tessera::kernels

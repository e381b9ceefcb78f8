// Highway versions of the elementwise and attention kernels (vector_ops.h).
//
// This file is compiled once per target by hwy/foreach_target.h: the code
// between HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE lands in
// tessera::kernels::N_AVX3 and N_AVX2 (N_NEON on AArch64), each with that
// target's function attributes. Highway also insists on a pass for the baseline target
// (HWY_SCALAR with GCC < 12.3, else HWY_EMU128); the table never uses it, so
// the scalar pass compiles nothing (HWY_SCALAR lacks the half-vector and
// pair-swap ops used here). Nothing is built with global -m flags, so no
// AVX-512 code can leak into generic inline functions. The table at the end picks N_AVX3 / N_AVX2 directly (no
// HWY_DYNAMIC_DISPATCH), so TESSERA_ISA can force any level.
//
// Bit-identity with the reference: Mul and Add are used separately where the
// reference rounds twice (the build has -ffp-contract=off), MulAdd only where
// it calls std::fma (attention's q·k and weighted sum); sums of squares
// follow ref::dot's order exactly and q·k ref::dot_fma's (16 lanes: lane j
// takes i ≡ j mod 16; a balanced tree at the end), and elementwise
// expressions keep the reference's association. Only Exp, Tanh and erf
// differ from libm (see vector_ops.h).

// Only the targets the table uses, plus the baseline Highway insists on
// (on AArch64 NEON is the baseline and the only target: SVE's vectors have
// no compile-time size, which the 16-lane sums here need).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vector_ops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/aligned_vector.h"
#include "core/error.h"
#include "kernels/cpu_isa.h"
#include "kernels/reference/dot.h"
#include "kernels/reference/kernels.h"
#include "kernels/vector_ops.h"

// Loops over a few registers (accumulator arrays) must be fully unrolled, or
// GCC keeps the arrays in memory.
#ifndef TESSERA_UNROLL
#define TESSERA_UNROLL _Pragma("GCC unroll 16")
#endif

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET != HWY_SCALAR
namespace tessera::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// Lanes of a full vector (16 for AVX3, 8 for AVX2, 4 for EMU128).
constexpr size_t kN = hn::MaxLanes(D());
// ref::dot keeps 16 partial sums; they take 16 / kN vectors.
constexpr size_t kK = 16 / kN;
static_assert(16 % kN == 0, "ref::dot's 16 lanes must fill whole vectors");

HWY_INLINE V LoadPart(D d, const float* p, size_t count) { return hn::MaskedLoad(hn::FirstN(d, count), d, p); }
HWY_INLINE void StorePart(V v, D d, float* p, size_t count) { hn::BlendedStore(v, hn::FirstN(d, count), d, p); }

// Rows of keys and values are f32, or f16 (an f16 KV cache: each value
// widened exactly to f32 as it is loaded, vcvtph2ps). LoadRow / LoadRowPart
// are LoadU / LoadPart for either; a partial f16 load zero-fills like
// LoadPart (f16 +0 widens to f32 +0).
using DH = hn::Rebind<hwy::float16_t, D>;
HWY_INLINE V LoadRow(D d, const float* p) { return hn::LoadU(d, p); }
HWY_INLINE V LoadRow(D d, const hwy::float16_t* p) { return hn::PromoteTo(d, hn::LoadU(DH(), p)); }
HWY_INLINE V LoadRowPart(D d, const float* p, size_t count) { return LoadPart(d, p, count); }
HWY_INLINE V LoadRowPart(D d, const hwy::float16_t* p, size_t count) {
  HWY_ALIGN uint16_t bits[kN] = {};
  std::memcpy(bits, p, count * sizeof(uint16_t));
  return hn::PromoteTo(d, hn::Load(DH(), reinterpret_cast<const hwy::float16_t*>(bits)));
}

// Sum of the lanes of v as a balanced tree: lane j + lane j + half, then
// again on the lower half, down to one lane.
template <class DT>
HWY_INLINE float ReduceTree(DT dt, hn::Vec<DT> v) {
  if constexpr (hn::MaxLanes(DT()) == 1) {
    return hn::GetLane(v);
  } else {
    const hn::Half<DT> dh;
    return ReduceTree(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
}

// ref::reduce_lanes16 on 16 lanes held as kK vectors (lane j in acc[j / kN]):
// the tree's steps of width >= kN add whole vectors, the rest halve one.
HWY_INLINE float ReduceLanes16(D d, V (&acc)[kK]) {
  TESSERA_UNROLL
  for (size_t w = kK / 2; w >= 1; w /= 2)
    TESSERA_UNROLL
    for (size_t i = 0; i < w; ++i) acc[i] = hn::Add(acc[i], acc[i + w]);
  return ReduceTree(d, acc[0]);
}

// acc + a·b: a multiply and an add (ref::dot's two roundings), or one fused
// multiply-add (ref::dot_fma's one).
template <bool kFma>
HWY_INLINE V MulAcc(V acc, V a, V b) {
  if constexpr (kFma) {
    return hn::MulAdd(a, b, acc);
  } else {
    return hn::Add(acc, hn::Mul(a, b));
  }
}

// R dot products a·b_r with b_r = b + r·stride, each exactly ref::dot(a, b_r, n)
// (kFma: ref::dot_fma). Several rows at once give independent dependency
// chains. Zero-filled lanes of the tail add +0 to partial sums that can never
// be -0 (they start at +0; fma(0, 0, +0) is +0), which leaves them unchanged,
// as the reference leaves those lanes alone.
template <int R, bool kFma, class T>
HWY_INLINE void DotRows(D d, const float* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t stride, int64_t n,
                        float* out) {
  V acc[R][kK];
  TESSERA_UNROLL
  for (int r = 0; r < R; ++r)
    TESSERA_UNROLL
    for (size_t k = 0; k < kK; ++k) acc[r][k] = hn::Zero(d);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    TESSERA_UNROLL
    for (size_t k = 0; k < kK; ++k) {
      const V va = hn::LoadU(d, a + i + k * kN);
      TESSERA_UNROLL
      for (int r = 0; r < R; ++r)
        acc[r][k] = MulAcc<kFma>(acc[r][k], va, LoadRow(d, b + r * stride + i + k * kN));
    }
  }
  TESSERA_UNROLL
  for (size_t k = 0; k < kK; ++k) {
    const int64_t count = n - i - static_cast<int64_t>(k * kN);
    if (count <= 0) break;
    if (count >= static_cast<int64_t>(kN)) {
      const V va = hn::LoadU(d, a + i + k * kN);
      TESSERA_UNROLL
      for (int r = 0; r < R; ++r)
        acc[r][k] = MulAcc<kFma>(acc[r][k], va, LoadRow(d, b + r * stride + i + k * kN));
    } else {
      const size_t c = static_cast<size_t>(count);
      const V va = LoadPart(d, a + i + k * kN, c);
      TESSERA_UNROLL
      for (int r = 0; r < R; ++r)
        acc[r][k] = MulAcc<kFma>(acc[r][k], va, LoadRowPart(d, b + r * stride + i + k * kN, c));
    }
  }
  TESSERA_UNROLL
  for (int r = 0; r < R; ++r) out[r] = ReduceLanes16(d, acc[r]);
}

// out[i] = f(a[i], b[i]) for n values, full vectors then one partial one.
template <class F>
HWY_INLINE void Map2(D d, const float* a, const float* b, int64_t n, float* out, const F& f) {
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kN) <= n; i += kN) hn::StoreU(f(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  if (i < n) {
    const size_t c = static_cast<size_t>(n - i);
    StorePart(f(LoadPart(d, a + i, c), LoadPart(d, b + i, c)), d, out + i, c);
  }
}

// x[i] = f(x[i]) in place.
template <class F>
HWY_INLINE void Map1(D d, float* x, int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kN) <= n; i += kN) hn::StoreU(f(hn::LoadU(d, x + i)), d, x + i);
  if (i < n) {
    const size_t c = static_cast<size_t>(n - i);
    StorePart(f(LoadPart(d, x + i, c)), d, x + i, c);
  }
}

// erf(x), float: the rational approximation x·P(x²)/Q(x²) on [-4, 4] used by
// Eigen, XLA and TVM (beyond ±4, erf is ±1 in float), clamped to [-1, 1].
HWY_INLINE V Erf(D d, V x) {
  x = hn::Min(hn::Max(x, hn::Set(d, -4.0f)), hn::Set(d, 4.0f));
  const V x2 = hn::Mul(x, x);
  V p = hn::MulAdd(x2, hn::Set(d, -2.72614225801306e-10f), hn::Set(d, 2.77068142495902e-08f));
  p = hn::MulAdd(x2, p, hn::Set(d, -2.10102402082508e-06f));
  p = hn::MulAdd(x2, p, hn::Set(d, -5.69250639462346e-05f));
  p = hn::MulAdd(x2, p, hn::Set(d, -7.34990630326855e-04f));
  p = hn::MulAdd(x2, p, hn::Set(d, -2.95459980854025e-03f));
  p = hn::MulAdd(x2, p, hn::Set(d, -1.60960333262415e-02f));
  p = hn::Mul(x, p);
  V q = hn::MulAdd(x2, hn::Set(d, -1.45660718464996e-05f), hn::Set(d, -2.13374055278905e-04f));
  q = hn::MulAdd(x2, q, hn::Set(d, -1.68282697438203e-03f));
  q = hn::MulAdd(x2, q, hn::Set(d, -7.37332916720468e-03f));
  q = hn::MulAdd(x2, q, hn::Set(d, -1.42647390514189e-02f));
  const V one = hn::Set(d, 1.0f);
  return hn::Min(hn::Max(hn::Div(p, q), hn::Neg(one)), one);
}

// ---------------------------------------------------------------------------

void RmsNorm(const float* x, const float* w, int64_t rows, int64_t width, float eps, bool plus_one, float* y) {
  const D d;
  const V one = hn::Set(d, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    float sum_sq;
    DotRows<1, false>(d, xr, xr, 0, width, &sum_sq);
    const float mean_sq = sum_sq / static_cast<float>(width);
    const V inv = hn::Set(d, 1.0f / std::sqrt(mean_sq + eps));
    // x and y may alias: each lane is read before it is written.
    if (w == nullptr) {
      Map2(d, xr, xr, width, yr, [&](V xv, V) HWY_ATTR { return hn::Mul(xv, inv); });
    } else if (plus_one) {
      Map2(d, xr, w, width, yr, [&](V xv, V wv) HWY_ATTR { return hn::Mul(hn::Mul(xv, inv), hn::Add(one, wv)); });
    } else {
      Map2(d, xr, w, width, yr, [&](V xv, V wv) HWY_ATTR { return hn::Mul(hn::Mul(xv, inv), wv); });
    }
  }
}

void Rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t rot_dim, bool neox, const float* cos,
          const float* sin) {
  const D d;
  const int64_t half = rot_dim / 2;
  if (half == 0) return;
  if (neox) {
    // Pairs (i, i + half): x0 and x1 come from two separate runs of lanes.
    for (int64_t t = 0; t < rows; ++t) {
      const float* c = cos + t * half;
      const float* s = sin + t * half;
      for (int64_t h = 0; h < heads; ++h) {
        float* v0 = x + (t * heads + h) * head_dim;
        float* v1 = v0 + half;
        for (int64_t i = 0; i < half; i += kN) {
          const size_t n = static_cast<size_t>(std::min<int64_t>(kN, half - i));
          const bool full = n == kN;
          const V x0 = full ? hn::LoadU(d, v0 + i) : LoadPart(d, v0 + i, n);
          const V x1 = full ? hn::LoadU(d, v1 + i) : LoadPart(d, v1 + i, n);
          const V cv = full ? hn::LoadU(d, c + i) : LoadPart(d, c + i, n);
          const V sv = full ? hn::LoadU(d, s + i) : LoadPart(d, s + i, n);
          const V a = hn::Sub(hn::Mul(x0, cv), hn::Mul(x1, sv));
          const V b = hn::Add(hn::Mul(x1, cv), hn::Mul(x0, sv));
          if (full) {
            hn::StoreU(a, d, v0 + i);
            hn::StoreU(b, d, v1 + i);
          } else {
            StorePart(a, d, v0 + i, n);
            StorePart(b, d, v1 + i, n);
          }
        }
      }
    }
    return;
  }
  // Interleaved pairs (2i, 2i+1), in place in the lanes: with cc = (c0, c0,
  // c1, c1, ...) and ss = (-s0, s0, -s1, s1, ...),
  //   x·cc + swap_pairs(x)·ss = (x0·c - x1·s, x1·c + x0·s, ...),
  // the reference's values bit for bit (x1·(-s) = -(x1·s) exactly, and
  // a + (-b) is a - b).
  const int64_t len = 2 * half;
  thread_local std::vector<float> table;
  if (table.size() < static_cast<size_t>(2 * len)) table.resize(static_cast<size_t>(2 * len));
  float* cc = table.data();
  float* ss = cc + len;
  for (int64_t t = 0; t < rows; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t i = 0; i < half; ++i) {
      cc[2 * i] = c[i];
      cc[2 * i + 1] = c[i];
      ss[2 * i] = -s[i];
      ss[2 * i + 1] = s[i];
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      int64_t i = 0;
      for (; i + static_cast<int64_t>(kN) <= len; i += kN) {
        const V xv = hn::LoadU(d, v + i);
        const V r = hn::Add(hn::Mul(xv, hn::LoadU(d, cc + i)), hn::Mul(hn::Reverse2(d, xv), hn::LoadU(d, ss + i)));
        hn::StoreU(r, d, v + i);
      }
      if (i < len) {  // an even count, so pairs stay whole
        const size_t n = static_cast<size_t>(len - i);
        const V xv = LoadPart(d, v + i, n);
        const V r =
            hn::Add(hn::Mul(xv, LoadPart(d, cc + i, n)), hn::Mul(hn::Reverse2(d, xv), LoadPart(d, ss + i, n)));
        StorePart(r, d, v + i, n);
      }
    }
  }
}

// Calls f(k, v, j, len, step) for KV head kvh's runs of keys/values visible
// at positions [begin, end) (j: index of the run's first key, counted from
// begin); a run's rows are `step` values apart (the cache's row step, or
// kv_width for the chunk's own rows), f32 or (cached rows of an f16 cache)
// hwy::float16_t. Cached positions are split where the ring wraps; the
// chunk's own rows are one run.
template <class F>
HWY_INLINE void ForEachRun(const ref::KvSpan& kv, int64_t kv_width, int64_t kvh, int64_t hd, int64_t begin,
                           int64_t end, const F& f) {
  int64_t p = begin;
  const int64_t past_stop = std::min(end, kv.past_end);
  const int64_t step = kv.past_row_step(kv_width);
  while (p < past_stop) {
    const int64_t slot = p % kv.capacity;
    const int64_t len = std::min(past_stop - p, kv.capacity - slot);
    const int64_t at = kv.past_at(slot, kvh, kv_width, hd);
    if (kv.past_k_f16) {
      f(reinterpret_cast<const hwy::float16_t*>(kv.past_k_f16) + at,
        reinterpret_cast<const hwy::float16_t*>(kv.past_v_f16) + at, p - begin, len, step);
    } else {
      f(kv.past_k + at, kv.past_v + at, p - begin, len, step);
    }
    p += len;
  }
  if (p < end) {
    const int64_t at = (p - kv.past_end) * kv_width + kvh * hd;
    f(kv.new_k + at, kv.new_v + at, p - begin, end - p, kv_width);
  }
}

// ---------------------------------------------------------------------------
// Attention.
//
// Queries are taken in tiles of kRowTile rows. For each tile and each KV head,
// (1) the q·k scores of every query head of the group and every row of the
// tile, over the union of the rows' visible keys, 16 keys at a time (Dots16),
// a block of keys serving the whole tile while in L1; (2) each row's softmax
// over its own keys only; (3) the weighted sum of values per row over its own
// keys, kHeadsAtOnce query heads sharing each load of v. Every row thus gets
// exactly the bits it gets from a one-row call (vector_ops_test checks it),
// whatever the tiling, the chunking of a prompt or the head split.
//
// Cost: the reference accumulates q·k and p·v with fused multiply-adds
// (ref::dot_fma, std::fma), so each takes head_dim/kN FMAs per key and query
// head (4 at head_dim 64 on AVX3; a multiply and an add, as ref::dot, took
// twice that on the two vector ports); q·k's reduction adds ~3 instructions
// per key, and exp, the division and the max about as much again.
// TESSERA_KERNEL_BENCH=1 vector_ops_test times it.
//
// q·k for a block of 16 keys at once: one accumulator per key holding
// ref::dot_fma's 16 partial sums (lane j: i ≡ j mod 16), then the 16
// accumulators reduced together by shuffles that pair exactly its tree (lane
// j with j+8, then j+4, j+2, j+1), so every score is ref::dot_fma's bits while
// the reduction costs ~3 instructions per key instead of ~8. AVX2 holds the
// 16 lanes as two 8-lane vectors (the first tree step is then a plain add).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
#define TESSERA_DOTS16 1

#if HWY_TARGET == HWY_AVX3
// The 16 keys' reduction and the store of their scores (lanes of acc[r]:
// key r's 16 partial sums).
HWY_INLINE void Reduce16Keys(D d, V (&acc)[16], float* out) {
  // Width 8: key 2p's lanes j + j+8 in lanes 0-7, key 2p+1's in 8-15.
  V s1[8];
  TESSERA_UNROLL
  for (int p = 0; p < 8; ++p)
    s1[p] = hn::Add(hn::ConcatLowerLower(d, acc[2 * p + 1], acc[2 * p]),
                    hn::ConcatUpperUpper(d, acc[2 * p + 1], acc[2 * p]));
  // Width 4: 128-bit block q of s2[p] holds key 4p+q's lanes j + j+4.
  V s2[4];
  TESSERA_UNROLL
  for (int p = 0; p < 4; ++p) {
    const __m512 x = s1[2 * p].raw, y = s1[2 * p + 1].raw;
    s2[p] = hn::Add(V{_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0))},
                    V{_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1))});
  }
  // Width 2: block q of s3[p] holds keys 8p+q and 8p+4+q, two lanes each.
  V s3[2];
  TESSERA_UNROLL
  for (int p = 0; p < 2; ++p) {
    const __m512 x = s2[2 * p].raw, y = s2[2 * p + 1].raw;
    s3[p] = hn::Add(V{_mm512_shuffle_ps(x, y, _MM_SHUFFLE(1, 0, 1, 0))},
                    V{_mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 2, 3, 2))});
  }
  // Width 1: lane 4q+c holds key 4c+q; then the keys put in order.
  const V s4 = hn::Add(V{_mm512_shuffle_ps(s3[0].raw, s3[1].raw, _MM_SHUFFLE(2, 0, 2, 0))},
                       V{_mm512_shuffle_ps(s3[0].raw, s3[1].raw, _MM_SHUFFLE(3, 1, 3, 1))});
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  hn::StoreU(V{_mm512_permutexvar_ps(order, s4.raw)}, d, out);
}

// out[r] = ref::dot_fma(a, b + r·stride, 16·C) for r < 16, a held in C registers
// and the keys visited one by one (one pointer, no register pressure).
template <int C, class T>
HWY_INLINE void Dots16Fixed(D d, const float* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t stride,
                            float* out) {
  V qa[C];
  TESSERA_UNROLL
  for (int c = 0; c < C; ++c) qa[c] = hn::LoadU(d, a + 16 * c);
  V acc[16];
  TESSERA_UNROLL
  for (int r = 0; r < 16; ++r) {
    const T* kr = b + r * stride;
    V s = hn::Zero(d);  // ref::dot's sums start at +0
    TESSERA_UNROLL
    for (int c = 0; c < C; ++c) s = hn::MulAdd(qa[c], LoadRow(d, kr + 16 * c), s);
    acc[r] = s;
  }
  Reduce16Keys(d, acc, out);
}

// out[r] = ref::dot_fma(a, b + r·stride, n) for r < 16.
template <class T>
HWY_INLINE void Dots16(D d, const float* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t stride, int64_t n,
                       float* out) {
  if (n == 64) return Dots16Fixed<4>(d, a, b, stride, out);
  if (n == 128) return Dots16Fixed<8>(d, a, b, stride, out);
  V acc[16];
  TESSERA_UNROLL
  for (int r = 0; r < 16; ++r) acc[r] = hn::Zero(d);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const V va = hn::LoadU(d, a + i);
    TESSERA_UNROLL
    for (int r = 0; r < 16; ++r) acc[r] = hn::MulAdd(va, LoadRow(d, b + r * stride + i), acc[r]);
  }
  if (i < n) {  // zero-filled lanes add +0 (see DotRows)
    const size_t c = static_cast<size_t>(n - i);
    const V va = LoadPart(d, a + i, c);
    TESSERA_UNROLL
    for (int r = 0; r < 16; ++r) acc[r] = hn::MulAdd(va, LoadRowPart(d, b + r * stride + i, c), acc[r]);
  }
  Reduce16Keys(d, acc, out);
}
#else  // HWY_AVX2
// Keys b, b + stride, b + 2·stride, b + 3·stride: their 16 lanes as two 8-lane
// accumulators, reduced through the tree's widths 8 and 4; block 0 of s[0]
// holds key 0's lanes j + j+4 (j < 4), block 1 key 1's; s[1] keys 2 and 3.
template <class T>
HWY_INLINE void Dots4Partial(D d, const float* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t stride,
                             int64_t n, V& s0, V& s1) {
  V acc[4][2];
  TESSERA_UNROLL
  for (int r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = hn::Zero(d);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const V a0 = hn::LoadU(d, a + i), a1 = hn::LoadU(d, a + i + 8);
    TESSERA_UNROLL
    for (int r = 0; r < 4; ++r) {
      acc[r][0] = hn::MulAdd(a0, LoadRow(d, b + r * stride + i), acc[r][0]);
      acc[r][1] = hn::MulAdd(a1, LoadRow(d, b + r * stride + i + 8), acc[r][1]);
    }
  }
  TESSERA_UNROLL
  for (int k = 0; k < 2; ++k) {
    const int64_t count = n - i - 8 * k;
    if (count <= 0) break;
    const size_t c = static_cast<size_t>(std::min<int64_t>(count, 8));
    const V va = LoadPart(d, a + i + 8 * k, c);
    TESSERA_UNROLL
    for (int r = 0; r < 4; ++r) acc[r][k] = hn::MulAdd(va, LoadRowPart(d, b + r * stride + i + 8 * k, c), acc[r][k]);
  }
  V t[4];
  TESSERA_UNROLL
  for (int r = 0; r < 4; ++r) t[r] = hn::Add(acc[r][0], acc[r][1]);  // width 8
  s0 = hn::Add(hn::ConcatLowerLower(d, t[1], t[0]), hn::ConcatUpperUpper(d, t[1], t[0]));  // width 4
  s1 = hn::Add(hn::ConcatLowerLower(d, t[3], t[2]), hn::ConcatUpperUpper(d, t[3], t[2]));
}

// out[r] = ref::dot_fma(a, b + r·stride, n) for r < 8.
template <class T>
HWY_INLINE void Dots8(D d, const float* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t stride, int64_t n,
                      float* out) {
  V s2[4];
  Dots4Partial(d, a, b, stride, n, s2[0], s2[1]);
  Dots4Partial(d, a, b + 4 * stride, stride, n, s2[2], s2[3]);
  // Width 2: block q of s3[p] holds keys 4p+q and 4p+2+q, two lanes each.
  V s3[2];
  TESSERA_UNROLL
  for (int p = 0; p < 2; ++p) {
    const __m256 x = s2[2 * p].raw, y = s2[2 * p + 1].raw;
    s3[p] = hn::Add(V{_mm256_shuffle_ps(x, y, _MM_SHUFFLE(1, 0, 1, 0))}, V{_mm256_shuffle_ps(x, y, _MM_SHUFFLE(3, 2, 3, 2))});
  }
  // Width 1: lane 4q+c holds key 2c+q; then the keys put in order.
  const V s4 = hn::Add(V{_mm256_shuffle_ps(s3[0].raw, s3[1].raw, _MM_SHUFFLE(2, 0, 2, 0))},
                       V{_mm256_shuffle_ps(s3[0].raw, s3[1].raw, _MM_SHUFFLE(3, 1, 3, 1))});
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  hn::StoreU(V{_mm256_permutevar8x32_ps(s4.raw, order)}, d, out);
}

template <class T>
HWY_INLINE void Dots16(D d, const float* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t stride, int64_t n,
                       float* out) {
  Dots8(d, a, b, stride, n, out);
  Dots8(d, a, b + 8 * stride, stride, n, out + 8);
}
#endif
#endif  // HWY_AVX3 || HWY_AVX2

// out[r] = ref::dot_fma(a, b + r·stride, n) for r < count.
template <class T>
HWY_INLINE void DotsAny(D d, const float* a, const T* b, int64_t stride, int64_t n, int64_t count, float* out) {
  int64_t j = 0;
#ifdef TESSERA_DOTS16
  for (; j + 16 <= count; j += 16) Dots16(d, a, b + j * stride, stride, n, out + j);
#endif
  for (; j + 4 <= count; j += 4) DotRows<4, true>(d, a, b + j * stride, stride, n, out + j);
  for (; j < count; ++j) DotRows<1, true>(d, a, b + j * stride, stride, n, out + j);
}

// Keys held transposed, for calls of many query rows. Block b of kN keys
// (lane l: key b·kN + l) keeps dimension i at kt + (b·hd + i)·kN, so one
// vector load gives kN keys' values of one dimension and q·k needs no
// reduction across lanes: lane l of a sum accumulates only key l.
//
// Keys [u0, u0 + len) of a run (rows `step` apart, f32 or f16) into kt.
template <class T>
HWY_INLINE void TransposeKeys(D d, const T* k, int64_t step, int64_t len, int64_t hd, int64_t u0, float* kt) {
  HWY_ALIGN float row[kN];
  for (int64_t j = 0; j < len; ++j) {
    const int64_t u = u0 + j;
    float* dst = kt + (u / static_cast<int64_t>(kN)) * hd * static_cast<int64_t>(kN) + u % static_cast<int64_t>(kN);
    const T* src = k + j * step;
    for (int64_t i0 = 0; i0 < hd; i0 += kN) {
      const size_t c = static_cast<size_t>(std::min<int64_t>(kN, hd - i0));
      hn::Store(c == kN ? LoadRow(d, src + i0) : LoadRowPart(d, src + i0, c), d, row);
      for (size_t l = 0; l < c; ++l) dst[(i0 + static_cast<int64_t>(l)) * static_cast<int64_t>(kN)] = row[l];
    }
  }
}

// out[b·kN + l] = ref::dot_fma(q, key b·kN + l, hd) for B blocks of
// transposed keys from kt. ref::dot_fma's lane j (i ≡ j mod 16) is, per key,
// a chain of FMAs over i = j, j + 16, ... here held in vector a_j whose lane l
// is key l's; its tree (j + j+8, then j+4, j+2, j+1) is then plain vector
// adds, taken in the order that keeps few vectors live: c_g = (a_g + a_g+8) +
// (a_g+4 + a_g+12) for g = 0, 2 (d_0 = c_0 + c_2), 1, 3 (d_1), then d_0 + d_1.
// Per key and query that is hd/16·16 = hd FMA lanes and 15/kN adds, and no
// shuffles: the row-major kernel above spends ~3 shuffles and adds per key on
// its reduction and more on loading each key's rows.
template <int B>
HWY_INLINE void DotsTransposed(D d, const float* HWY_RESTRICT q, const float* HWY_RESTRICT kt, int64_t hd,
                               float* out) {
  const int64_t n = static_cast<int64_t>(kN);
  V half[B][2];  // d_0, d_1 per block
  TESSERA_UNROLL
  for (int step = 0; step < 4; ++step) {
    const int g = step == 1 ? 2 : step == 2 ? 1 : step;
    V a[B][4];
    TESSERA_UNROLL
    for (int b = 0; b < B; ++b)
      TESSERA_UNROLL
      for (int r = 0; r < 4; ++r) a[b][r] = hn::Zero(d);  // ref::dot_fma's sums start at +0
    for (int64_t i0 = 0; i0 < hd; i0 += 16) {
      TESSERA_UNROLL
      for (int r = 0; r < 4; ++r) {  // lanes g, g + 8, g + 4, g + 12
        const int64_t i = i0 + g + 8 * (r & 1) + 4 * (r >> 1);
        if (i >= hd) continue;  // head_dim not a multiple of 16: lane j has one term fewer
        const V qi = hn::Set(d, q[i]);
        TESSERA_UNROLL
        for (int b = 0; b < B; ++b) a[b][r] = hn::MulAdd(qi, hn::LoadU(d, kt + (b * hd + i) * n), a[b][r]);
      }
    }
    TESSERA_UNROLL
    for (int b = 0; b < B; ++b) {
      const V c = hn::Add(hn::Add(a[b][0], a[b][1]), hn::Add(a[b][2], a[b][3]));
      half[b][step / 2] = step % 2 == 0 ? c : hn::Add(half[b][step / 2], c);
    }
  }
  TESSERA_UNROLL
  for (int b = 0; b < B; ++b) hn::StoreU(hn::Add(half[b][0], half[b][1]), d, out + b * n);
}

// Blocks of transposed keys one DotsTransposed call takes: 4 × 4 sums of 32
// registers on AVX3 (64 keys), 2 × 4 of 16 on AVX2 (16 keys); each load of
// q[i] then serves B FMAs.
constexpr int kTransposedBlocks = kN >= 16 ? 4 : 2;
constexpr int64_t kTransposedKeys = kTransposedBlocks * static_cast<int64_t>(kN);
// Calls of at least this many query rows transpose their keys first: each
// key is then read by rows × group queries, which repays its transposition.
constexpr int64_t kTransposedMinRows = 8;

// Makes v opaque to the compiler, so a value loaded once stays in a register:
// GCC otherwise folds the load into each of its uses (one FMA per head in
// WeightedChunk), three 64-byte loads where one was written, and the
// weighted sum ran at the L1's load rate (rdtsc per phase, SmolLM2's shape,
// one layer's 512-row prefill at avx512: 5.0-5.9 cycles per query-key pair
// against 2.4-3.3 with the load kept; docs/BENCHMARKING.md).
HWY_INLINE void InRegister(V& v) {
#if HWY_ARCH_ARM
  asm("" : "+w"(v.raw));  // AArch64's constraint for a SIMD register
#else
  asm("" : "+v"(v.raw));
#endif
}

// For G heads g at once: o_g[0 .. M·kN) += Σ_j probs_g[j] · v_j[0 ..] for
// `count` rows v_j = v + j·stride in row order (o_g = o + g·o_stride, probs_g =
// probs + g·p_stride), the sums held in registers, starting from 0 when
// `first`, else from o_g (the sums so far); the last vector has `last` lanes
// (kN when whole). Per lane this is the reference's acc[i] = fma(p, v[i],
// acc[i]), in order; the heads share the loads of v.
template <int G, int M, class T>
HWY_INLINE void WeightedChunk(D d, const T* v, int64_t stride, int64_t count, const float* probs,
                              int64_t p_stride, bool first, size_t last, float* o, int64_t o_stride) {
  const bool whole = last == kN;
  V acc[G][M];
  TESSERA_UNROLL
  for (int g = 0; g < G; ++g) {
    float* og = o + g * o_stride;
    TESSERA_UNROLL
    for (int m = 0; m < M - 1; ++m) acc[g][m] = first ? hn::Zero(d) : hn::LoadU(d, og + m * kN);
    acc[g][M - 1] = first ? hn::Zero(d) : whole ? hn::LoadU(d, og + (M - 1) * kN) : LoadPart(d, og + (M - 1) * kN, last);
  }
  for (int64_t j = 0; j < count; ++j) {
    const T* vj = v + j * stride;
    V p[G];
    TESSERA_UNROLL
    for (int g = 0; g < G; ++g) p[g] = hn::Set(d, probs[g * p_stride + j]);
    TESSERA_UNROLL
    for (int m = 0; m < M; ++m) {
      V vm = (m < M - 1 || whole) ? LoadRow(d, vj + m * kN) : LoadRowPart(d, vj + m * kN, last);
      InRegister(vm);
      TESSERA_UNROLL
      for (int g = 0; g < G; ++g) acc[g][m] = hn::MulAdd(p[g], vm, acc[g][m]);
    }
  }
  TESSERA_UNROLL
  for (int g = 0; g < G; ++g) {
    float* og = o + g * o_stride;
    TESSERA_UNROLL
    for (int m = 0; m < M - 1; ++m) hn::StoreU(acc[g][m], d, og + m * kN);
    if (whole) {
      hn::StoreU(acc[g][M - 1], d, og + (M - 1) * kN);
    } else {
      StorePart(acc[g][M - 1], d, og + (M - 1) * kN, last);
    }
  }
}

template <int G, class T>
HWY_INLINE void WeightedHeads(D d, const T* v, int64_t stride, int64_t count, const float* probs, int64_t p_stride,
                              bool first, float* o, int64_t hd) {
  const int64_t vectors = (hd + static_cast<int64_t>(kN) - 1) / static_cast<int64_t>(kN);
  const size_t rest = static_cast<size_t>(hd % static_cast<int64_t>(kN));
  for (int64_t c = 0; c < vectors; c += 4) {
    const int64_t m = std::min<int64_t>(4, vectors - c);
    const size_t last = (c + m == vectors && rest) ? rest : kN;
    const int64_t i0 = c * static_cast<int64_t>(kN);
    switch (m) {
      case 4: WeightedChunk<G, 4>(d, v + i0, stride, count, probs, p_stride, first, last, o + i0, hd); break;
      case 3: WeightedChunk<G, 3>(d, v + i0, stride, count, probs, p_stride, first, last, o + i0, hd); break;
      case 2: WeightedChunk<G, 2>(d, v + i0, stride, count, probs, p_stride, first, last, o + i0, hd); break;
      default: WeightedChunk<G, 1>(d, v + i0, stride, count, probs, p_stride, first, last, o + i0, hd); break;
    }
  }
}

// The reference's softmax of n raw scores q·k in place: s·scale (then
// cap·tanh(s / cap) when capped), the max, e = exp(s - max) (arguments <= 0,
// inside Exp's range), their sum in ref::dot's order (16 lanes, then the tree),
// and
// e / sum. Two passes fuse the scale with the max and exp with the sum.
HWY_INLINE void Softmax(D d, float* scores, int64_t n, V scale, bool capped, V cap) {
  const V neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto scaled = [&](V s) HWY_ATTR {
    s = hn::Mul(s, scale);
    if (capped) s = hn::Mul(cap, hn::Tanh(d, hn::Div(s, cap)));
    return s;
  };
  V vmax = neg_inf;
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kN) <= n; i += kN) {
    const V s = scaled(hn::LoadU(d, scores + i));
    hn::StoreU(s, d, scores + i);
    vmax = hn::Max(vmax, s);
  }
  if (i < n) {
    const size_t c = static_cast<size_t>(n - i);
    const V s = scaled(LoadPart(d, scores + i, c));
    StorePart(s, d, scores + i, c);
    vmax = hn::Max(vmax, hn::IfThenElse(hn::FirstN(d, c), s, neg_inf));
  }
  vmax = hn::MaxOfLanes(d, vmax);
  // exp and the 16 partial sums: lane j of acc[k] sums the values at
  // i ≡ k·kN + j (mod 16); lanes past n add +0, which leaves them unchanged.
  V acc[kK];
  TESSERA_UNROLL
  for (size_t k = 0; k < kK; ++k) acc[k] = hn::Zero(d);
  i = 0;
  for (; i + 16 <= n; i += 16) {
    TESSERA_UNROLL
    for (size_t k = 0; k < kK; ++k) {
      const V e = hn::Exp(d, hn::Sub(hn::LoadU(d, scores + i + k * kN), vmax));
      hn::StoreU(e, d, scores + i + k * kN);
      acc[k] = hn::Add(acc[k], e);
    }
  }
  TESSERA_UNROLL
  for (size_t k = 0; k < kK; ++k) {
    const int64_t count = n - i - static_cast<int64_t>(k * kN);
    if (count <= 0) break;
    const size_t c = static_cast<size_t>(std::min<int64_t>(count, kN));
    const V e = hn::IfThenElseZero(hn::FirstN(d, c), hn::Exp(d, hn::Sub(LoadPart(d, scores + i + k * kN, c), vmax)));
    StorePart(e, d, scores + i + k * kN, c);
    acc[k] = hn::Add(acc[k], e);
  }
  const V sum = hn::Set(d, ReduceLanes16(d, acc));
  Map1(d, scores, n, [&](V e) HWY_ATTR { return hn::Div(e, sum); });
}

// Query heads sharing the loads of v in the weighted sum: 3 heads × 4
// vectors = 12 accumulators of 32 registers on AVX3 (a remainder of two
// heads, as a decode thread's run of heads can leave, shares in pairs);
// 2 × 4 of 16 on AVX2.
constexpr int64_t kHeadsAtOnce = kN >= 16 ? 3 : 2;

// Query rows handled together: a block of keys or values is used by every
// row of the tile and every query head of the GQA group while it is in L1.
constexpr int64_t kRowTile = 8;
// Keys per block of the weighted sum (16 KB of values at head_dim 64).
constexpr int64_t kValueBlock = 64;

void Attention(const float* q, int64_t rows, const ref::KvSpan& kv, const ref::AttentionShape& shape, int64_t h_begin,
               int64_t h_end, int64_t t_begin, int64_t t_end, float* out) {
  const D d;
  const int64_t hd = shape.head_dim;
  const int64_t kv_width = shape.kv_heads * hd;
  const int64_t group = shape.heads / shape.kv_heads;
  // Keys visible to row t: [row_begin(t), row_end(t)); neither end decreases with t.
  auto row_begin = [&](int64_t t) { return ref::first_visible_key(kv, shape.window, t); };
  auto row_end = [&](int64_t t) { return ref::visible_key_end(kv, t); };
  // Many rows: q·k reads keys transposed (DotsTransposed), the same bits as
  // the row-major kernel, so the choice never shows in the results.
  const bool transposed = t_end - t_begin >= kTransposedMinRows;
  // The keys any row of this call sees, transposed from kt_base on.
  const int64_t kt_base = row_begin(t_begin), kt_keys = row_end(t_end - 1) - kt_base;
  // Scores of one row tile's queries (rows × query heads of one KV head), and
  // the transposed keys, reused across calls: no allocation once grown. A
  // transposed tile's keys start at a block boundary (up to kN - 1 keys
  // early) and whole groups of blocks are stored, hence the padding.
  thread_local AlignedVector<float> buffer, keys_t;
  const int64_t most = kv.past_end - kv.past_begin + rows;  // >= keys visible to any tile
  const int64_t pad = transposed ? static_cast<int64_t>(kN) + kTransposedKeys : 0;
  const size_t need = static_cast<size_t>((most + pad) * std::min(rows, kRowTile) * std::min(group, h_end - h_begin));
  if (buffer.size() < need) buffer.resize(need);
  float* const scratch = buffer.data();
  const int64_t kt_blocks = (kt_keys + static_cast<int64_t>(kN) - 1) / static_cast<int64_t>(kN) + kTransposedBlocks;
  if (transposed && keys_t.size() < static_cast<size_t>(kt_blocks * hd * static_cast<int64_t>(kN)))
    keys_t.resize(static_cast<size_t>(kt_blocks * hd * static_cast<int64_t>(kN)));
  float* const kt = keys_t.data();
  const V scale = hn::Set(d, shape.scale);
  const bool capped = shape.softcap > 0;
  const V cap = hn::Set(d, shape.softcap);

  for (int64_t h0 = h_begin; h0 < h_end;) {
    // Query heads [h0, h1) all read KV head kvh.
    const int64_t kvh = h0 / group;
    const int64_t h1 = std::min(h_end, (kvh + 1) * group);
    const int64_t heads = h1 - h0;
    if (transposed) {
      // Lanes past the last key stay finite (zero): their scores are computed and never read.
      std::fill(kt, kt + kt_blocks * hd * static_cast<int64_t>(kN), 0.0f);
      ForEachRun(kv, kv_width, kvh, hd, kt_base, kt_base + kt_keys,
                 [&](const auto* k, const auto*, int64_t j0, int64_t len, int64_t step) HWY_ATTR {
        TransposeKeys(d, k, step, len, hd, j0, kt);
      });
    }
    for (int64_t t0 = t_begin; t0 < t_end; t0 += kRowTile) {
      const int64_t nt = std::min(kRowTile, t_end - t0);
      // The tile's scores cover the union of its rows' keys, [ub, ue); row
      // ti's own keys are [lo(ti), hi(ti)) in that numbering.
      int64_t ub = row_begin(t0);
      if (transposed) ub = kt_base + (ub - kt_base) / static_cast<int64_t>(kN) * static_cast<int64_t>(kN);
      const int64_t ue = row_end(t0 + nt - 1);
      const int64_t nu = ue - ub;
      const int64_t row_step = nu + pad;  // between the score rows of (row, head)
      auto lo = [&](int64_t ti) { return row_begin(t0 + ti) - ub; };
      auto hi = [&](int64_t ti) { return row_end(t0 + ti) - ub; };
      // Scores of row ti, head g: scratch[(ti·heads + g)·row_step ..].
      auto scores_of = [&](int64_t ti, int64_t g) { return scratch + (ti * heads + g) * row_step; };
      auto query_of = [&](int64_t ti, int64_t g) { return q + ((t0 + ti) * shape.heads + h0 + g) * hd; };

      // q·k, exactly ref::dot_fma, a block of keys serving every row and
      // head of the tile while in L1; a block a row cannot see is skipped (a
      // partly visible one is computed whole, the extra scores unused).
      if (transposed) {
        const float* kt_tile = kt + (ub - kt_base) * hd;  // ub - kt_base is a multiple of kN
        for (int64_t u0 = 0; u0 < nu; u0 += kTransposedKeys) {
          const float* kb = kt_tile + u0 * hd;
          for (int64_t ti = 0; ti < nt; ++ti) {
            if (u0 >= hi(ti) || u0 + kTransposedKeys <= lo(ti)) continue;
            for (int64_t g = 0; g < heads; ++g) {
              float* s = scores_of(ti, g) + u0;
              if (u0 + kTransposedKeys <= hi(ti)) {
                DotsTransposed<kTransposedBlocks>(d, query_of(ti, g), kb, hd, s);
              } else {  // the row's last keys: only the blocks it sees
                for (int64_t b = 0; u0 + b * static_cast<int64_t>(kN) < hi(ti); ++b)
                  DotsTransposed<1>(d, query_of(ti, g), kb + b * hd * static_cast<int64_t>(kN), hd,
                                    s + b * static_cast<int64_t>(kN));
              }
            }
          }
        }
      } else {
        ForEachRun(kv, kv_width, kvh, hd, ub, ue,
                   [&](const auto* k, const auto*, int64_t j0, int64_t len, int64_t step) HWY_ATTR {
          for (int64_t b = 0; b < len; b += 16) {
            const int64_t count = std::min<int64_t>(16, len - b);
            const int64_t u0 = j0 + b;
            const auto* kb = k + b * step;
            for (int64_t ti = 0; ti < nt; ++ti) {
              if (u0 >= hi(ti) || u0 + count <= lo(ti)) continue;
              for (int64_t g = 0; g < heads; ++g)
                DotsAny(d, query_of(ti, g), kb, step, hd, count, scores_of(ti, g) + u0);
            }
          }
        });
      }

      // Softmax of each row's own keys.
      for (int64_t ti = 0; ti < nt; ++ti) {
        const int64_t n = hi(ti) - lo(ti);
        for (int64_t g = 0; g < heads; ++g) {
          Softmax(d, scores_of(ti, g) + lo(ti), n, scale, capped, cap);
        }
      }

      // out = Σ p_j v_j in key order, block by block, the partial sums kept in
      // `out` between blocks; each row over its own keys only.
      ForEachRun(kv, kv_width, kvh, hd, ub, ue,
                 [&](const auto*, const auto* v, int64_t j0, int64_t len, int64_t step) HWY_ATTR {
        for (int64_t b = 0; b < len; b += kValueBlock) {
          const int64_t u0 = j0 + b, u1 = u0 + std::min(kValueBlock, len - b);
          for (int64_t ti = 0; ti < nt; ++ti) {
            const int64_t from = std::max(u0, lo(ti)), to = std::min(u1, hi(ti));
            if (from >= to) continue;
            const bool first = from == lo(ti);
            const auto* vb = v + (from - j0) * step;
            float* o = out + ((t0 + ti) * shape.heads + h0) * hd;
            int64_t g = 0;
            for (; g + kHeadsAtOnce <= heads; g += kHeadsAtOnce)
              WeightedHeads<kHeadsAtOnce>(d, vb, step, to - from, scores_of(ti, g) + from, row_step, first,
                                          o + g * hd, hd);
            if (kHeadsAtOnce > 2 && g + 2 <= heads) {
              WeightedHeads<2>(d, vb, step, to - from, scores_of(ti, g) + from, row_step, first, o + g * hd, hd);
              g += 2;
            }
            for (; g < heads; ++g)
              WeightedHeads<1>(d, vb, step, to - from, scores_of(ti, g) + from, row_step, first, o + g * hd, hd);
          }
        }
      });
    }
    h0 = h1;
  }
}

void GatedActivation(Activation act, const float* gate, const float* up, int64_t n, float* out) {
  const D d;
  const V one = hn::Set(d, 1.0f);
  const V half = hn::Set(d, 0.5f);
  switch (act) {
    case Activation::SiLU: {
      // gate / (1 + exp(-gate)) · up. Exp is valid up to 104; past ~88.7 it
      // is +inf either way, so clamping the argument changes nothing.
      const V limit = hn::Set(d, 100.0f);
      Map2(d, gate, up, n, out, [&](V x, V u) HWY_ATTR {
        const V e = hn::Exp(d, hn::Min(hn::Neg(x), limit));
        return hn::Mul(hn::Div(x, hn::Add(one, e)), u);
      });
      return;
    }
    case Activation::GeluTanh: {
      const V k0 = hn::Set(d, 0.7978845608028654f);  // sqrt(2/pi)
      const V k1 = hn::Set(d, 0.044715f);
      Map2(d, gate, up, n, out, [&](V x, V u) HWY_ATTR {
        const V inner = hn::Mul(k0, hn::Add(x, hn::Mul(hn::Mul(hn::Mul(k1, x), x), x)));
        return hn::Mul(hn::Mul(hn::Mul(half, x), hn::Add(one, hn::Tanh(d, inner))), u);
      });
      return;
    }
    case Activation::Sigmoid: {
      const V limit = hn::Set(d, 100.0f);
      Map2(d, gate, up, n, out, [&](V x, V u) HWY_ATTR {
        return hn::Div(u, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(x), limit))));
      });
      return;
    }
    case Activation::Gelu: {
      const V k = hn::Set(d, 0.7071067811865476f);  // 1/sqrt(2)
      Map2(d, gate, up, n, out, [&](V x, V u) HWY_ATTR {
        return hn::Mul(hn::Mul(hn::Mul(half, x), hn::Add(one, Erf(d, hn::Mul(x, k)))), u);
      });
      return;
    }
  }
}

// x = PromoteTo(DemoteTo(x)): vcvtps2ph rounds to nearest even, as
// f32_to_f16 does, and the widening back is exact.
void RoundToF16(float* x, int64_t n) {
  const D d;
  Map1(d, x, n, [&](V v) HWY_ATTR { return hn::PromoteTo(d, hn::DemoteTo(DH(), v)); });
}

void AddInPlace(float* y, const float* x, int64_t n) {
  const D d;
  Map2(d, y, x, n, y, [](V a, V b) HWY_ATTR { return hn::Add(a, b); });
}

void Softcap(float* x, int64_t n, float cap) {
  const D d;
  const V c = hn::Set(d, cap);
  Map1(d, x, n, [&](V v) HWY_ATTR { return hn::Mul(c, hn::Tanh(d, hn::Div(v, c))); });
}

void Dots(const float* a, const float* b, int64_t stride, int64_t n, int64_t count, float* out) {
  DotsAny(D(), a, b, stride, n, count, out);
}

// ref::argmax's index in two passes. The reference keeps the first index of
// the largest value under `>`: NaNs never win and never block, unless x[0]
// is NaN (nothing is > NaN, so it keeps 0). Pass 1: the maximum of the
// non-NaN values (NaN lanes read as -inf; Max of two numbers is exact, so
// any lane order gives the same maximum). Pass 2: the first index holding
// a value == that maximum (+0 and -0 compare equal, as under `>` neither
// displaces the other).
int64_t Argmax(const float* x, int64_t n) {
  if (n <= 0 || std::isnan(x[0])) return 0;
  const D d;
  const size_t N = hn::Lanes(d);
  const V neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  V m = neg_inf;
  int64_t i = 0;
  for (; i + static_cast<int64_t>(N) <= n; i += static_cast<int64_t>(N)) {
    const V v = hn::LoadU(d, x + i);
    m = hn::Max(m, hn::IfThenElse(hn::IsNaN(v), neg_inf, v));
  }
  float best = hn::GetLane(hn::MaxOfLanes(d, m));
  for (int64_t j = i; j < n; ++j)
    if (x[j] > best) best = x[j];
  const V b = hn::Set(d, best);
  for (i = 0; i + static_cast<int64_t>(N) <= n; i += static_cast<int64_t>(N)) {
    const intptr_t k = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, x + i), b));
    if (k >= 0) return i + k;
  }
  for (; i < n; ++i)
    if (x[i] == best) return i;
  return 0;  // not reached: x[0] is a number, so some value equals the maximum
}

// Σ_j w_j[c] · taps[j][c] over the taps that exist (null: before the
// sequence), in tap order, each product rounded before its add: the
// reference convolutions' sum (ref::short_conv, ref::causal_conv_silu), for
// the vector of channels at c, or the one channel c.
V TapSum(D d, const float* const* taps, const float* weight, int64_t channels, int64_t kernel, int64_t c) {
  V acc = hn::Zero(d);
  bool first = true;
  for (int64_t j = 0; j < kernel; ++j) {
    if (taps[j] == nullptr) continue;
    const V term = hn::Mul(hn::LoadU(d, weight + j * channels + c), hn::LoadU(d, taps[j] + c));
    acc = first ? term : hn::Add(acc, term);
    first = false;
  }
  return acc;
}

float TapSum(const float* const* taps, const float* weight, int64_t channels, int64_t kernel, int64_t c) {
  float acc = 0.0f;
  bool first = true;
  for (int64_t j = 0; j < kernel; ++j) {
    if (taps[j] == nullptr) continue;
    const float term = weight[j * channels + c] * taps[j][c];
    acc = first ? term : acc + term;
    first = false;
  }
  return acc;
}

// ref::short_conv a vector of channels at a time: the same products and
// adds in the same order (Mul then Add, no FMA), so the same bits.
void ShortConv(const float* bcx, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
               const float* const* past, int64_t c_begin, int64_t c_end, float* bx_out, float* y) {
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  // The tap inputs of the current row, oldest first (null: before the sequence).
  std::vector<const float*> taps(static_cast<size_t>(kernel));
  for (int64_t t = 0; t < rows; ++t) {
    const float* B = bcx + t * 3 * channels;
    const float* C = B + channels;
    const float* X = C + channels;
    float* bx = bx_out + t * channels;
    for (int64_t j = 0; j < kernel; ++j) {
      const int64_t back = kernel - 1 - j;
      taps[j] = back <= t ? bx_out + (t - back) * channels : past[kernel - 1 - (back - t)];
    }
    int64_t c = c_begin;
    for (; c + N <= c_end; c += N) hn::StoreU(hn::Mul(hn::LoadU(d, B + c), hn::LoadU(d, X + c)), d, bx + c);
    for (; c < c_end; ++c) bx[c] = B[c] * X[c];
    c = c_begin;
    for (; c + N <= c_end; c += N) {
      const V acc = TapSum(d, taps.data(), weight, channels, kernel, c);
      hn::StoreU(hn::Mul(hn::LoadU(d, C + c), acc), d, y + t * channels + c);
    }
    for (; c < c_end; ++c) {
      const float acc = TapSum(taps.data(), weight, channels, kernel, c);
      y[t * channels + c] = C[c] * acc;
    }
  }
}

// ref::causal_conv_silu a vector of channels at a time: the taps' products
// and adds in the reference's order (the same bits), then SiLU with
// Highway's Exp (a few ulp).
void CausalConvSilu(const float* x, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                    const float* const* past, int64_t c_begin, int64_t c_end, float* y) {
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const V one = hn::Set(d, 1.0f), limit = hn::Set(d, 100.0f);
  std::vector<const float*> taps(static_cast<size_t>(kernel));
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t j = 0; j < kernel; ++j) {
      const int64_t back = kernel - 1 - j;
      taps[j] = back <= t ? x + (t - back) * channels : past[kernel - 1 - (back - t)];
    }
    int64_t c = c_begin;
    for (; c + N <= c_end; c += N) {
      const V acc = TapSum(d, taps.data(), weight, channels, kernel, c);
      hn::StoreU(hn::Div(acc, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(acc), limit)))), d, y + t * channels + c);
    }
    for (; c < c_end; ++c) {
      const float acc = TapSum(taps.data(), weight, channels, kernel, c);
      y[t * channels + c] = acc / (1.0f + std::exp(-acc));
    }
  }
}

// ref::delta_rule_step with the value dimension in vectors: every element's
// operations are the reference's, in its order (Mul then Add, no FMA).
void DeltaRuleStep(float* S, const float* q, const float* k, const float* v, float decay, float beta, int64_t dk,
                   int64_t dv, float* scratch, float* o) {
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  if (dv % N != 0) {
    ref::delta_rule_step(S, q, k, v, decay, beta, dk, dv, scratch, o);
    return;
  }
  float* m = scratch;
  const V vdecay = hn::Set(d, decay), vbeta = hn::Set(d, beta);
  for (int64_t j = 0; j < dv; j += N) hn::StoreU(hn::Zero(d), d, m + j);
  for (int64_t i = 0; i < dk; ++i) {
    float* row = S + i * dv;
    const V ki = hn::Set(d, k[i]);
    for (int64_t j = 0; j < dv; j += N) {
      const V r = hn::Mul(hn::LoadU(d, row + j), vdecay);
      hn::StoreU(r, d, row + j);
      hn::StoreU(hn::Add(hn::LoadU(d, m + j), hn::Mul(r, ki)), d, m + j);
    }
  }
  for (int64_t j = 0; j < dv; j += N)
    hn::StoreU(hn::Mul(hn::Sub(hn::LoadU(d, v + j), hn::LoadU(d, m + j)), vbeta), d, m + j);
  if (o)
    for (int64_t j = 0; j < dv; j += N) hn::StoreU(hn::Zero(d), d, o + j);
  for (int64_t i = 0; i < dk; ++i) {
    float* row = S + i * dv;
    const V ki = hn::Set(d, k[i]);
    const V qi = hn::Set(d, o ? q[i] : 0.0f);
    for (int64_t j = 0; j < dv; j += N) {
      const V r = hn::Add(hn::LoadU(d, row + j), hn::Mul(ki, hn::LoadU(d, m + j)));
      hn::StoreU(r, d, row + j);
      if (o) hn::StoreU(hn::Add(hn::LoadU(d, o + j), hn::Mul(r, qi)), d, o + j);
    }
  }
}

}  // namespace

const VectorOps kOps = {
    nullptr, &RmsNorm, &Rope, &Attention, &GatedActivation, &AddInPlace, &Softcap, &Dots, &RoundToF16, &Argmax,
    &CausalConvSilu, &DeltaRuleStep, &ShortConv,
};

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels
#endif  // HWY_TARGET != HWY_SCALAR
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels {

namespace {

void ref_dots(const float* a, const float* b, int64_t stride, int64_t n, int64_t count, float* out) {
  for (int64_t r = 0; r < count; ++r) out[r] = ref::dot_fma(a, b + r * stride, n);
}

VectorOps named(const VectorOps& ops, const char* isa) {
  VectorOps v = ops;
  v.isa = isa;
  return v;
}

}  // namespace

const VectorOps& vector_ops(Isa isa) {
  if (!isa_supported(isa))
    fail("options", "isa", "this CPU does not support {} (best: {})", isa_name(isa), isa_name(detected_isa()));
  isa = vector_isa(isa);
  static const VectorOps scalar = {"scalar",        &ref::rms_norm,     &ref::rope,   &ref::attention,
                                   &ref::gated_activation, &ref::add_in_place, &ref::softcap, &ref_dots,
                                   &ref::round_to_f16, &ref::argmax, &ref::causal_conv_silu,
                                   &ref::delta_rule_step, &ref::short_conv};
  switch (isa) {
    case Isa::Scalar:
      return scalar;
    case Isa::Avx2: {
#if HWY_TARGETS & HWY_AVX2
      static const VectorOps avx2 = named(N_AVX2::kOps, "avx2");
      return avx2;
#else
      break;
#endif
    }
    case Isa::Avx512: {
#if HWY_TARGETS & HWY_AVX3
      static const VectorOps avx512 = named(N_AVX3::kOps, "avx512");
      return avx512;
#else
      break;
#endif
    }
    case Isa::Neon: {
#if HWY_TARGETS & HWY_NEON
      static const VectorOps neon = named(N_NEON::kOps, "neon");
      return neon;
#else
      break;
#endif
    }
    case Isa::Amx:
      break;
  }
  fail("options", "isa", "{} kernels were not compiled into this build", isa_name(isa));
}

}  // namespace tessera::kernels
#endif  // HWY_ONCE

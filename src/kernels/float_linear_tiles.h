// The loop nest of the float_linear kernels (kernels/float_linear.h), shared
// by the AVX2 and AVX-512 files. Each includes this after defining
// TESSERA_FLOAT_LINEAR_TARGET (its target attribute) and a `Lanes` class: 16
// f32 lanes (one register, or two) with
//   V zero(); V load_x(const float*); V load_w<F>(const void* row, int64_t c);
//   V mul_add(V acc, V x, V w)                acc + x·w, two roundings, per lane
//   V load_x_tail / load_w_tail<F>(…, int r)  the first r < 16 lanes, the rest 0
//   V mul_add_tail(V acc, V x, V w, int r)    mul_add on the first r lanes only
//   float reduce(V)                           ref::reduce_lanes16
//   kRows × kTokens: the prefill register tile; kDecodeRows: rows per step of one token.
// (Included once per translation unit: its functions are internal to it.)
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/weight_format.h"

namespace tessera::kernels {
namespace {

template <WeightFormat F>
constexpr int64_t float_bytes() {
  return F == WeightFormat::F32 ? 4 : 2;
}

// Outputs [n, n+R) × tokens [t, t+T): one register tile over every column.
// Prefetch: as this tile streams its R rows, touch the next R rows' bytes
// into L1 and those of the block 4 ahead into L2 (a prefetch past the
// matrix's end is harmless: it never faults).
template <WeightFormat F, int R, int T, bool Prefetch>
TESSERA_FLOAT_LINEAR_TARGET inline void float_tile(const WeightView& w, const float* x, int64_t t, int64_t n,
                                                   const float* bias, float* y, int64_t ldy) {
  using V = typename Lanes::V;
  const int64_t cols = w.cols(), es = float_bytes<F>();
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + n * cols * es;
  const uint8_t* row[R];
  for (int r = 0; r < R; ++r) row[r] = base + r * cols * es;
  const uint8_t* next = base + R * cols * es;  // the next row block, R·cols·es bytes
  V acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < T; ++j) acc[r][j] = Lanes::zero();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    if constexpr (Prefetch) {
      // This step reads 16·es bytes of each of R rows; touch as many of the next block's.
      for (int64_t b = 0; b < R * 16 * es; b += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(next + c * es * R + b), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(next + 3 * R * cols * es + c * es * R + b), _MM_HINT_T1);
      }
    }
    V wv[R];
    for (int r = 0; r < R; ++r) wv[r] = Lanes::template load_w<F>(row[r], c);
    for (int j = 0; j < T; ++j) {
      const V xv = Lanes::load_x(x + (t + j) * cols + c);
      for (int r = 0; r < R; ++r) acc[r][j] = Lanes::mul_add(acc[r][j], xv, wv[r]);
    }
  }
  if (c < cols) {
    const int rest = static_cast<int>(cols - c);
    V wv[R];
    for (int r = 0; r < R; ++r) wv[r] = Lanes::template load_w_tail<F>(row[r], c, rest);
    for (int j = 0; j < T; ++j) {
      const V xv = Lanes::load_x_tail(x + (t + j) * cols + c, rest);
      for (int r = 0; r < R; ++r) acc[r][j] = Lanes::mul_add_tail(acc[r][j], xv, wv[r], rest);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < T; ++j) {
      const float s = Lanes::reduce(acc[r][j]);
      y[(t + j) * ldy + n + r] = bias ? s + bias[n + r] : s;
    }
}

// Every token of rows [n, n+R): tiles of Lanes::kTokens tokens, then one by one.
template <WeightFormat F, int R>
TESSERA_FLOAT_LINEAR_TARGET inline void float_rows(const WeightView& w, const float* x, int64_t tokens, int64_t n,
                                                   bool prefetch, const float* bias, float* y, int64_t ldy) {
  // The first tile of the rows (t == 0) prefetches the next block's.
  constexpr int T = Lanes::kTokens;
  int64_t t = 0;
  for (; t + T <= tokens; t += T) {
    if (t == 0 && prefetch) float_tile<F, R, T, true>(w, x, t, n, bias, y, ldy);
    else float_tile<F, R, T, false>(w, x, t, n, bias, y, ldy);
  }
  for (; t < tokens; ++t) {
    if (t == 0 && prefetch) float_tile<F, R, 1, true>(w, x, t, n, bias, y, ldy);
    else float_tile<F, R, 1, false>(w, x, t, n, bias, y, ldy);
  }
}

template <WeightFormat F>
TESSERA_FLOAT_LINEAR_TARGET void float_linear_rows(const WeightView& w, const float* x, int64_t tokens,
                                                   const float* bias, int64_t n_begin, int64_t n_end, float* y,
                                                   int64_t ldy) {
  // Prefill steps kRows rows over token tiles; decode kDecodeRows rows over one token.
  constexpr int R = Lanes::kRows, D = Lanes::kDecodeRows;
  int64_t n = n_begin;
  if (tokens >= Lanes::kTokens) {
    for (; n + R <= n_end; n += R) float_rows<F, R>(w, x, tokens, n, n + 2 * R <= n_end, bias, y, ldy);
  } else {
    for (; n + D <= n_end; n += D) float_rows<F, D>(w, x, tokens, n, n + 2 * D <= n_end, bias, y, ldy);
  }
  for (; n < n_end; ++n) float_rows<F, 1>(w, x, tokens, n, false, bias, y, ldy);
}

TESSERA_FLOAT_LINEAR_TARGET void float_linear_dispatch(const WeightView& w, const float* x, int64_t tokens,
                                                       const float* bias, int64_t n_begin, int64_t n_end, float* y,
                                                       int64_t ldy) {
  switch (w.format) {
    case WeightFormat::F16: return float_linear_rows<WeightFormat::F16>(w, x, tokens, bias, n_begin, n_end, y, ldy);
    case WeightFormat::BF16: return float_linear_rows<WeightFormat::BF16>(w, x, tokens, bias, n_begin, n_end, y, ldy);
    default: return float_linear_rows<WeightFormat::F32>(w, x, tokens, bias, n_begin, n_end, y, ldy);
  }
}

}  // namespace
}  // namespace tessera::kernels

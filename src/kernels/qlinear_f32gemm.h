// Batched-prefill linear layers in f32 on AVX2 (Isa::Avx2): the prefill
// GEMM of machines without AVX-512 / AMX.
//
//   y[t, n] = out_scale[n] · reduce8(lanes)   (+ bias[n]),
//   lane j = fma-chain over c ≡ j (mod 8), in column order, of x[t, c] · w_q[n, c]
//
// reduce8 is ref::reduce_lanes(lanes, 8): j + j+4, then j + j+2, then j + j+1.
// w_q are the int8 weight values of the integer-dot kernels
// (kernels/qlinear.h), exact in f32; the activations are x itself,
// unrounded — so this path is closer to the f32 reference than the int8
// activations of the integer-dot kernels, and its numerics differ from
// theirs: the runtime uses it only for calls of kF32GemmMinTokens or more
// tokens, so decode keeps the integer-dot bits (as the AMX path does).
//
// Why f32 FMA and not the integer dot: AVX2 has no vpdpbusd. Its int8 dot
// (vpmaddubsw + vpmaddwd + sign fix-ups + cvt + FMA, about 9 µops per 64
// multiply-adds on the two vector-multiply ports) is slower per multiply-add
// than one FMA on 8 floats, and with two activation passes it does the dot
// twice. Each thread expands 32 weight rows at a time into f32 (vpshufb
// palette lookup, once per call), then a 3-row × 4-token register tile (12
// accumulators, enough to hide the FMA latency on both FMA ports) streams
// the expanded rows (L2) against a 4-token tile of activations (L1): at most
// 15 loads per 12 FMAs, so the FMA ports set the pace. Measured at 85-95%
// of FMA peak on one thread (a 2 × 4 tile, 8 accumulators: 60-80%).
//
// Bits: every output is the same sequence of operations for any row split
// (thread count) and any token tiling; the scalar twin gives the same bits.
#pragma once

#include <cstdint>

#include "kernels/qlinear.h"

namespace tessera::kernels {

// Calls with fewer tokens run the integer-dot kernels. Measured on SmolLM2
// (docs/BENCHMARKING.md): an 8-token call takes 49 ms here against 88 ms on
// the two-pass integer dot; one decode step takes 20 ms on the integer dot,
// and expanding every weight to f32 for a single token would cost about as
// much as the step.
constexpr int64_t kF32GemmMinTokens = 4;

// y[t * ldy + n] for t < tokens, n in [n_begin, n_end); x is [tokens][w.cols()].
// Needs AVX2 + FMA (Error otherwise).
void qlinear_f32gemm_avx2(const QLinearWeights& w, const float* x, int64_t tokens, const float* bias,
                          int64_t n_begin, int64_t n_end, float* y, int64_t ldy);

// The scalar twin: same contract, same bits, any CPU.
void qlinear_f32gemm_scalar(const QLinearWeights& w, const float* x, int64_t tokens, const float* bias,
                            int64_t n_begin, int64_t n_end, float* y, int64_t ldy);

// Row n of w_q as floats (out[c] = w.value(n, c)); the AVX2 expansion is
// tested against it.
void expand_row_f32_avx2(const QLinearWeights& w, int64_t n, float* out);

}  // namespace tessera::kernels

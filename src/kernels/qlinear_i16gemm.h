// Batched-prefill linear layers with int16 activations: the prefill GEMM at
// Isa::Avx2 (vpmaddwd) and Isa::Avx512 (VNNI vpdpwssd, two rows per vector:
// kernels/qlinear_i16gemm_avx512.cc), with the same bits.
//
//   y[t, n] = out_scale[n] · reduce8(lanes)   (+ bias[n]),
//   lanes[j] = for each 128-column block b of the row, in order:
//                fma(float(Σ_{c in b, (c mod 16) div 2 = j} w_q[n, c] · a_q[t, c]), s[t, b], lanes[j])
//
// reduce8 is ref::reduce_lanes(lanes, 8): j + j+4, then j + j+2, then j + j+1
// (reduce_lanes8_added of kernels/lane_reduce.h).
// w_q are the int8 weight values of the integer-dot kernels
// (kernels/qlinear.h); a_q and s are the int16 activations and block scales
// of kernels/int16_activations.h. The int32 block sums are exact (at most
// 16 · 127 · 32767 per lane), so only the per-block multiply-add and the
// final reduction round. The numerics differ from the decode kernels' (int8
// activations in two passes): the runtime uses this path only for calls of
// kI16GemmMinTokens or more tokens, so decode keeps the integer-dot bits (as
// the AMX path does).
//
// Why int16 on AVX2: it has no vpdpbusd. Its int8 dot (vpmaddubsw + vpmaddwd +
// sign fix-ups, two activation passes for the decode kernels' accuracy)
// takes about 14 integer µops per 64 multiply-adds, and on Zen 3 those
// instructions share two pipes. vpmaddwd alone does 16 int16 multiply-adds
// in one µop (8 for one f32 FMA), and the vpaddd that accumulates it runs
// on any vector ALU. Each thread expands 32 weight rows at a time to int16
// (vpshufb palette lookup, once per call: 64 bytes per column, held in L2),
// then a 2-row × 4-token register tile streams them against 4 tokens'
// activations (L1). The f32 FMA GEMM this replaced, and the numbers, are in
// docs/REJECTED_APPROACHES.md. Where the CPU has AVX-VNNI (kernels/cpu_isa.h),
// a 2-row × 6-token tile fuses each vpmaddwd + vpaddd into one VEX vpdpwssd
// (the same exact int32 sums).
// Why int16 on AVX-512 without AMX: vpdpwssd does 32 multiply-adds per
// instruction against vpdpbusd's 64, but the decode kernels' accuracy needs
// two int8 passes (so 32 again) plus a cvt + FMA per pass and chunk, and
// their lut unpack per token; the int16 GEMM expands the weights once per
// call and needs one cvt + FMA per two rows and block (numbers in
// docs/BENCHMARKING.md).
//
// Bits: every output is the same sequence of operations for any row split
// (thread count) and any token tiling; the scalar twin gives the same bits.
#pragma once

#include <cstdint>

#include "kernels/int16_activations.h"
#include "kernels/qlinear.h"

namespace tessera::kernels {

// Calls with fewer tokens run the integer-dot kernels: expanding every
// weight to int16 costs about as much as a one-token step.
constexpr int64_t kI16GemmMinTokens = 4;

// Calls of a multiple of this many tokens run whole register tiles only: the
// AVX-512 and AVX-VNNI tiles take 6 tokens, the AVX2 vpmaddwd tile 4. A
// call's last few tokens otherwise run a narrower tile with too few
// independent sums to cover vpdpwssd's latency (2 of 128 tokens cost about
// as much as 6; the executor sizes its row blocks by this, cpu/executor.cc).
constexpr int64_t kI16GemmTokenMultiple = 12;

// y[t * ldy + n] for t < acts.rows, n in [n_begin, n_end); acts.cols == w.cols().
// Dispatch by level: Avx512 and Amx take the AVX-512 kernel, Avx2 the AVX2
// one, Scalar the twin.
void qlinear_i16gemm(Isa isa, const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                     int64_t n_begin, int64_t n_end, float* y, int64_t ldy);
// Needs AVX2 (Error otherwise).
void qlinear_i16gemm_avx2(const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                          int64_t n_begin, int64_t n_end, float* y, int64_t ldy);

// Needs AVX-512 VNNI (Error otherwise).
void qlinear_i16gemm_avx512(const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                            int64_t n_begin, int64_t n_end, float* y, int64_t ldy);

// The scalar twin: same contract, same bits, any CPU.
void qlinear_i16gemm_scalar(const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                            int64_t n_begin, int64_t n_end, float* y, int64_t ldy);

// Row n of w_q as int16 (out[c] = w.value(n, c)); the AVX2 expansion is
// tested against it.
void expand_row_i16_avx2(const QLinearWeights& w, int64_t n, int16_t* out);

}  // namespace tessera::kernels

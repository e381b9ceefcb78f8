// Batched-prefill linear layers on AMX bf16 tiles (Isa::Amx).
//
//   y[t, n] = out_scale[n] · Σ_k bf16(x[t, k]) · w_q[n, k]   (+ bias[n])
//
// w_q are the same int8 weight values the integer-dot kernels use
// (kernels/qlinear.h: int8 bytes, or lut palette entries on the int8 grid),
// which bf16 holds exactly; activations are rounded to bf16
// (kernels/bf16_activations.h) instead of int8 blocks. Products of two bf16
// values are exact in f32; the sum is accumulated in f32 by the tile unit,
// whose order of additions inside one TDPBF16PS Intel does not specify (the
// scalar twin adds in column order; they agree to within f32 summation error,
// tested). The kernel's bits do not depend on the row split (thread count):
// every output is the same sequence of tile instructions.
//
// Each thread expands 32 weight rows at a time into a tile-major bf16 panel
// (lut4 through a 16-entry vpermw table, lut3 / lut2 through int8) and
// multiplies them with every token of the call (2 × 2 tiles of 16 features ×
// 16 tokens), so the expansion is paid once per
// call while the tile units do 16·16·32 multiply-adds per instruction. The
// numerics differ from the integer-dot path (bf16 vs int8-block activations);
// the runtime uses this kernel only for calls of kAmxMinTokens or more tokens,
// so decode, and short prompts, keep the avx512 bits.
#pragma once

#include <cstdint>

#include "kernels/bf16_activations.h"
#include "kernels/qlinear.h"

namespace tessera::kernels {

// Calls with fewer tokens run the integer-dot kernels (measured crossover,
// docs/BENCHMARKING.md).
constexpr int64_t kAmxMinTokens = 32;

// y[t * ldy + n] for t < acts.rows, n in [n_begin, n_end); acts.cols == w.cols().
// Needs Isa::Amx (Error otherwise).
void qlinear_amx(const QLinearWeights& w, const Bf16Activations& acts, const float* bias, int64_t n_begin,
                 int64_t n_end, float* y, int64_t ldy);

// The scalar twin: same contract, same bits, any CPU.
void qlinear_bf16_scalar(const QLinearWeights& w, const Bf16Activations& acts, const float* bias, int64_t n_begin,
                         int64_t n_end, float* y, int64_t ldy);

}  // namespace tessera::kernels

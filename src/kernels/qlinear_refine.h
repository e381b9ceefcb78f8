// Top-logit refinement for the output head: run the head with one int8
// activation pass, then recompute with two passes (kernels/qlinear.h) every
// output that could be its row's two-pass maximum. The row's argmax is then
// exactly the two-pass argmax, for about the cost of one pass over the
// head's weights (a third of a small model's bytes per token).
//
// Why it is exact. Let W_n = 127 · |out_scale[n]| bound the magnitude of row
// n's weights (every stored weight is out_scale · an int8 value), e1 / e2 the
// rounding residuals of one / two activation passes, and ρ_n a bound on the
// kernel's f32 rounding. Then, against the exact dot product z_n,
//   |y1_n − z_n| ≤ B1_n = W_n·‖e1‖₁ + ρ_n,   |y2_n − z_n| ≤ B2_n = W_n·‖e2‖₁ + ρ_n.
// With L = max_m (y1_m − B1_m), any n with y1_n + B1_n + B2_n + max_m B2_m < L
// has z_n below the best lower bound by more than the two-pass error, so
// y2_n is below some y2_m and below every refined maximum: it can be neither
// the two-pass argmax nor the argmax of the mixed row. Every other output is
// recomputed with two passes. ρ_n is taken as 1e-5 · W_n · (‖x‖₁ + ‖e1‖₁),
// far above the ~40 roundings of 2⁻²⁴ a kernel's sum takes.
//
// The refined outputs get the two-pass kernel's bits (each row's
// activations quantized alone, which gives a row the bits it gets in any
// call); the rest keep their one-pass bits. Deterministic, and independent
// of the thread count (it runs on the calling thread).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/int8_activations.h"
#include "kernels/qlinear.h"

namespace tessera::kernels {

struct RefineScratch {
  Int8Activations acts;            // one row, two passes
  std::vector<float> residual1, residual2, block_out;  // block_out: one row of outputs
  std::vector<int64_t> blocks;     // 4-output blocks to recompute
};

// y [rows][ldy]: the one-pass outputs qlinear gave for x [rows][w.cols()]
// (bias included). Rewrites the candidates of every row in place with their
// two-pass values; returns how many outputs were recomputed (in whole blocks
// of 4). Works on lut4 and int8 weights alike.
int64_t refine_top_outputs(Isa isa, const QLinearWeights& w, const float* x, int64_t rows, const float* bias,
                           float* y, int64_t ldy, RefineScratch& scratch);

}  // namespace tessera::kernels

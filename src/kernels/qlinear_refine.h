// Top-logit refinement for the output head: run the head with one int8
// activation pass, then recompute with two passes (kernels/qlinear.h) every
// output that could be its row's two-pass maximum. The row's argmax is then
// exactly the two-pass argmax, for about the cost of one pass over the
// head's weights (a third of a small model's bytes per token).
//
// Why it is exact. Let w_n be row n's weights (out_scale[n] · int8 values,
// or a blocked format's s_b · code + o_b), W_n = 127 · |S_n| ≥ max |w_n|
// (RefineHead), N_n ≥ ‖w_n‖₂ (RefineHead),
// e1 / e2 the rounding residuals of one / two activation passes, and ρ_n a
// bound on the kernel's f32 rounding. Against the exact dot product z_n,
// Hölder (‖w‖∞·‖e‖₁) and Cauchy-Schwarz (‖w‖₂·‖e‖₂) both bound |w_n · e|, so
//   |y1_n − z_n| ≤ B1_n = min(W_n·‖e1‖₁, N_n·‖e1‖₂) + ρ_n,
//   |y2_n − z_n| ≤ B2_n = min(W_n·‖e2‖₁, N_n·‖e2‖₂) + ρ_n.
// With L = max_m (y1_m − B1_m), any n with y1_n + B1_n + B2_n + max_m B2_m < L
// has z_n below the best lower bound by more than the two-pass error, so
// y2_n is below some y2_m and below every refined maximum: it can be neither
// the two-pass argmax nor the argmax of the mixed row. Every other output is
// recomputed with two passes. ρ_n is taken as 1e-5 · W_n · (‖x‖₁ + ‖e1‖₁),
// far above the ~40 roundings of 2⁻²⁴ a kernel's sum takes, and above the
// rounding of the bounds' own double arithmetic (relative ~1e-15).
//
// The 2-norm bound is the tight one on real heads: ‖e‖₁ ≈ 20·‖e‖₂ over 576
// columns while ‖w‖₂ ≈ 7·max|w|, so it keeps ~3× fewer logits in the band;
// SmolLM2's decode recomputed 378 blocks of 4 per token with the 1-norm
// bound alone, 22 with both (docs/BENCHMARKING.md). The scans over all
// outputs are vector code (kernels/refine_scan.h).
// Works on every format the integer kernels run (int8, lut*, blk4, blk8).
//
// The refined outputs get the two-pass kernel's bits (each row's
// activations quantized alone, which gives a row the bits it gets in any
// call); the rest keep their one-pass bits. Deterministic, and independent
// of the thread count (the recomputed blocks are independent of each other
// and of how they are split over threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/int8_activations.h"
#include "kernels/qlinear.h"
#include "kernels/refine_scan.h"

namespace tessera::kernels {

// What the refinement keeps per bound head: its row norms N_n ≥ ‖w_n‖₂
// (rounded up to float), its bound scales S_n with W_n = 127 · |S_n| ≥
// max |w_n|, and max_n |S_n|. Per-row formats: S_n = out_scale[n] and N_n =
// |out_scale[n]| · sqrt(Σ_c w_q[n][c]²) (the integer sum exact). Blocked
// formats (blk4 / blk8: w = s_b · code + o_b per block b): S_n = max_b
// (|s_b| · max |code| + |o_b|) / 127 and N_n² = Σ_b (s_b² Σ code² + 2 s_b o_b
// Σ code + o_b² · block_cols) from exact integer sums; the kernel's sums
// are Σ w · x̃ in exact arithmetic, the f32 rounding of its per-lane terms
// bounded by W_n · ‖x̃‖₁ as for the per-row formats, so the same ρ holds.
// Built once, when a head is bound: one pass over its weights.
struct RefineHead {
  std::vector<float> norms;
  std::vector<float> scales;  // S_n
  double max_scale = 0;
};
RefineHead make_refine_head(const QLinearWeights& w);

// One call's refinement state (reused across calls: no allocation once grown).
struct RefineScratch {
  std::vector<RefineMargins> margins;  // per row of the call
  std::vector<double> b2_upper;        // per row: ≥ max_n B2_n, known before the scan
  // Per scanned range: each row's bounds over the range, and the range's
  // candidate blocks against its own best lower bound (a superset of its
  // final ones), as row · blocks_per_row + block.
  struct Range {
    std::vector<RefineBounds> bounds;
    std::vector<int64_t> candidates;
  };
  std::vector<Range> ranges;
  // Ranges claimed so far (behind a pointer so the scratch stays movable).
  std::unique_ptr<std::atomic<int64_t>> ranges_used = std::make_unique<std::atomic<int64_t>>(0);
  std::vector<float> residual1, residual2;
  Int8Activations acts;         // the planned row's two passes
  std::vector<int64_t> blocks;  // the planned row's final blocks of 4 outputs, ascending
};

// The refinement of a head's one-pass outputs y [rows][ldy] of x [rows][cols]
// (bias included) runs in four steps, so that the scans over all outputs
// happen inside the head's own parallel pass, on outputs still in cache:
//   1. refine_prepare: each row's error margins (before the head's GEMV);
//      `max_ranges` bounds how many refine_scan_range calls follow.
//   2. refine_scan_range over output ranges [n_begin, n_end) covering [0, n)
//      once, n_begin a multiple of 4, from any threads, each after the
//      range's outputs are written.
//   3. refine_plan_row for each row t: the row's final candidate blocks
//      (scratch.blocks, ascending; the same for any split of step 2) and its
//      two passes (scratch.acts); returns the block count (0: nothing to
//      refine, e.g. non-finite logits).
//   4. refine_blocks over scratch.blocks, in any split over threads.
void refine_prepare(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* x, int64_t rows,
                    int64_t max_ranges, RefineScratch& scratch);
void refine_scan_range(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* y, int64_t ldy,
                       int64_t rows, int64_t n_begin, int64_t n_end, RefineScratch& scratch);
int64_t refine_plan_row(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* x, const float* y,
                        int64_t ldy, int64_t t, RefineScratch& scratch);
// Recomputes blocks scratch.blocks[begin, end) of the planned row into yt
// (its outputs) with two passes.
void refine_blocks(Isa isa, const QLinearWeights& w, const RefineScratch& scratch, const float* bias, int64_t begin,
                   int64_t end, float* yt);

// All four steps on the calling thread, step 2 as one range. Returns how many
// outputs were recomputed (in whole blocks of 4). Works on lut4 and int8
// weights alike.
int64_t refine_top_outputs(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* x, int64_t rows,
                           const float* bias, float* y, int64_t ldy, RefineScratch& scratch);

}  // namespace tessera::kernels

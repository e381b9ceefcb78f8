// The two scans of the output head's top-logit refinement
// (kernels/qlinear_refine.h) over a row's outputs y[0, n), given the head's
// row scales s[0, n) and row norms N[0, n) (refine_row_norms). Per output m,
// in double, with W = 127 · |s_m| and the margins g of the row's activations:
//
//   B1_m = min(W · g.e1, N_m · g.q1) + W · g.rho     (bounds |y1_m − z_m|)
//   B2_m = min(W · g.e2, N_m · g.q2) + W · g.rho     (bounds |y2_m − z_m|)
//
//   refine_bounds:     best_lower = max_m (y_m − B1_m)          (−inf if none)
//                      b2_max     = max(0, max_m B2_m)
//   refine_candidates: the blocks of 4 outputs (m / 4, ascending) holding an
//                      m with ((y_m + B1_m) + B2_m) + b2_max ≥ best_lower
//
// min(a, b) is a < b ? a : b and the running maxima skip NaN (a < NaN is
// false), which is what _mm*_min_pd(a, b) and _mm*_max_pd(new, running) do,
// so the AVX2 and AVX-512 versions, doing the same double operations lane by
// lane (max being exact in any order), give the scalar twin's values and
// blocks. A NaN output is never a candidate (NaN ≥ x is false).
//
// A head has tens of thousands of outputs (49152 in SmolLM2, 151936 in
// Qwen2.5); the scalar loops ran at 8-11 cycles per output, about 6% of a
// SmolLM2 decode step.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu_isa.h"

namespace tessera::kernels {

// One row's activation error norms: e1 = ‖x − one pass‖₁, e2 = ‖x − two
// passes‖₁, q1 / q2 the same in the 2-norm, and rho the factor of W that
// bounds the kernels' f32 rounding.
struct RefineMargins {
  double e1, e2, q1, q2, rho;
};

struct RefineBounds {
  double best_lower;
  double b2_max;
};

RefineBounds refine_bounds(Isa isa, const float* y, const float* scale, const float* norm, int64_t n,
                           const RefineMargins& g);
// Appends the candidate blocks to `blocks` (which it does not clear).
void refine_candidates(Isa isa, const float* y, const float* scale, const float* norm, int64_t n,
                       const RefineMargins& g, const RefineBounds& bounds, std::vector<int64_t>& blocks);

// The candidate test of one output (the scalar twins' test).
bool refine_is_candidate(float y, float scale, float norm, const RefineMargins& g, const RefineBounds& bounds);

// The scalar twins (what Isa::Scalar runs).
RefineBounds refine_bounds_scalar(const float* y, const float* scale, const float* norm, int64_t n,
                                  const RefineMargins& g);
void refine_candidates_scalar(const float* y, const float* scale, const float* norm, int64_t n,
                              const RefineMargins& g, const RefineBounds& bounds, std::vector<int64_t>& blocks);

}  // namespace tessera::kernels

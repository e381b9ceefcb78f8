// Linear layers on unquantized weights — f32, f16 and bf16 bundles — with
// the reference's bits:
//
//   y[t, n] = reduce16(lanes) (+ bias[n]),
//   lane j = Σ over c ≡ j (mod 16), in column order, of x[t, c] · w[n, c]
//            (each product rounded to f32, then added: two roundings, no FMA)
//
// which is exactly ref::linear_any (kernels/reference/dot.h). A stored
// weight widens to f32 exactly (f16 through vcvtph2ps, bf16 by a 16-bit
// shift), and the 16 lanes are one AVX-512 register or two AVX2 registers,
// so the vector kernels give the reference's bits for every shape, token
// count and row split (thread count): the optimized path needs no agreement
// tolerance at all on these formats.
//
// Why a multiply and an add rather than FMA: decode reads 2 or 4 bytes per
// weight against 2 vector µops per 16 weights, far below what the memory
// delivers; an FMA would halve the arithmetic of prefill but change the
// bits. Rows go R at a time (the weight chunk loads once per R rows, the
// activation chunk once per T tokens), with the next row block prefetched
// while the first token tile streams the current one.
#pragma once

#include <cstdint>

#include "core/weight_format.h"
#include "kernels/cpu_isa.h"

namespace tessera::kernels {

// Whether a vector kernel exists for this weight: an f32, f16 or bf16 matrix.
bool float_linear_supported(const WeightView& w);
// Whether `isa` has vector kernels for them (avx2, avx512, amx; at scalar and
// neon float_linear runs the reference).
bool float_linear_vectorized(Isa isa);

// y[t * ldy + n] for t < tokens, n in [n_begin, n_end); x is [tokens][w.cols()].
// Isa::Scalar runs ref::linear_any itself: the twin the others are tested against.
void float_linear(Isa isa, const WeightView& w, const float* x, int64_t tokens, const float* bias, int64_t n_begin,
                  int64_t n_end, float* y, int64_t ldy);

// The per-ISA kernels (same contract; Error-free: the caller checked the CPU).
void float_linear_avx2(const WeightView& w, const float* x, int64_t tokens, const float* bias, int64_t n_begin,
                       int64_t n_end, float* y, int64_t ldy);
void float_linear_avx512(const WeightView& w, const float* x, int64_t tokens, const float* bias, int64_t n_begin,
                         int64_t n_end, float* y, int64_t ldy);

}  // namespace tessera::kernels

// A GEMM for many tokens on f32 weights, with FMA: the image encoders'
// linears (4,096 patches per image), where kernels/float_linear.h (decode's
// kernel: the reference's two roundings per product, one weight row at a
// time) leaves most of the arithmetic unused.
//
//   y[t * ldy + n] = acc(t, n) + bias[n],
//   acc(t, n) = fma(x[t, K-1], w[n, K-1], ... fma(x[t, 1], w[n, 1], fma(x[t, 0], w[n, 0], 0)))
//
// one FMA chain per output in column order, so every vector width (AVX2's 8
// lanes, AVX-512's 16, NEON's 4) and the scalar twin give the same bits, for
// any thread count or token split. The weights are packed once per call into
// panels of 2 vectors of outputs; a micro-kernel keeps 6 tokens × 2 vectors
// of accumulators in registers over a chunk of 256 columns, the panel's
// chunk staying in L1 and the tokens' in L2.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu_isa.h"

namespace tessera::kernels {

// x: [tokens][cols], w: [rows][cols] (an f32 matrix, row-major), bias: [rows]
// or null; y[t * ldy + n] for n < rows. `pool` may be null (one thread).
// Isa::Scalar (and levels without vector kernels) run the scalar twin.
void float_gemm(Isa isa, const float* w, int64_t rows, int64_t cols, const float* x, int64_t tokens,
                const float* bias, float* y, int64_t ldy, ThreadPool* pool);

}  // namespace tessera::kernels

// Elementwise and attention kernels for one vector instruction set.
//
// vector_ops(Isa::Scalar) is the reference kernels themselves; Avx2 and Avx512
// are Highway code compiled for HWY_AVX2 / HWY_AVX3 with per-function target
// attributes (vector_ops.cc), Neon the same code for HWY_NEON (AArch64
// builds), so this header and its callers stay generic.
//
// How each level relates to the reference (vector_ops_test.cc checks it):
//   identical: argmax (the reference's index for every input, NaNs included)
//   bit-identical: rms_norm, rope, add_in_place, dots, round_to_f16, short_conv, delta_rule_step (same operations in the
//     same order; sums of squares use ref::dot's 16-lane order and its
//     reduction tree, no FMA; dots is ref::dot_fma: the same lanes and tree,
//     one FMA per term)
//   within a few ulp: gated_activation, softcap (Highway Exp/Tanh and a
//     rational erf instead of libm)
//   attention: the q·k scores (ref::dot_fma's bits, 16 keys reduced at once), the
//     scale, the max, the division by the sum and the weighted sum of values
//     are the reference's operations in the reference's order; only exp
//     (Highway), tanh (softcap) and the order of the softmax denominator's sum
//     (16 lanes) differ, so the output is within a small relative error of the
//     reference. A row of a multi-row call gets the same bits as alone. On
//     an f16 cache (KvSpan::past_k_f16) each cached value is widened to f32
//     as it is loaded: the bits of the same call on an f32 cache holding the
//     widened values.
// Every level is deterministic: same inputs, same bits, whatever the thread
// split of heads [h_begin, h_end) and query rows [t_begin, t_end).
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "kernels/cpu_isa.h"
#include "kernels/reference/kernels.h"

namespace tessera::kernels {

// One instruction set's elementwise and attention kernels. Same signatures and
// semantics as the reference kernels in kernels/reference/kernels.h.
struct VectorOps {
  const char* isa;  // "scalar", "avx2", "avx512", "neon"
  void (*rms_norm)(const float* x, const float* w, int64_t rows, int64_t width, float eps, bool plus_one, float* y);
  void (*rope)(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t rot_dim, bool neox, const float* cos,
               const float* sin);
  void (*attention)(const float* q, int64_t rows, const ref::KvSpan& kv, const ref::AttentionShape& shape,
                    int64_t h_begin, int64_t h_end, int64_t t_begin, int64_t t_end, float* out);
  void (*gated_activation)(Activation act, const float* gate, const float* up, int64_t n, float* out);
  void (*add_in_place)(float* y, const float* x, int64_t n);
  void (*softcap)(float* x, int64_t n, float cap);
  // out[r] = ref::dot_fma(a, b + r·stride, n) for r < count, bit for bit (the
  // q·k kernel attention uses; blocks of 16 rows share one reduction).
  void (*dots)(const float* a, const float* b, int64_t stride, int64_t n, int64_t count, float* out);
  // ref::round_to_f16 (an f16 KV cache's rounding of a call's own rows).
  void (*round_to_f16)(float* x, int64_t n);
  // ref::argmax: the first index of the largest value (the programs' Argmax op).
  int64_t (*argmax)(const float* x, int64_t n);
  // ref::causal_conv_silu: the convolution bit for bit, the SiLU within a few ulp.
  void (*causal_conv_silu)(const float* x, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                           const float* const* past, int64_t c_begin, int64_t c_end, float* y);
  // ref::delta_rule_step, bit for bit (a rollback replays the reference on the state this left).
  void (*delta_rule_step)(float* S, const float* q, const float* k, const float* v, float decay, float beta,
                          int64_t dk, int64_t dv, float* scratch, float* o);
  // ref::short_conv, bit for bit (LFM2's gated short convolution).
  void (*short_conv)(const float* bcx, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                     const float* const* past, int64_t c_begin, int64_t c_end, float* bx_out, float* y);
};

// Isa::Scalar gives the reference kernels themselves; Avx2/Avx512/Neon the
// Highway code compiled for HWY_AVX2 / HWY_AVX3 / HWY_NEON. Throws tessera::Error if the CPU
// lacks the level (isa_supported).
const VectorOps& vector_ops(Isa isa);

}  // namespace tessera::kernels

// The NEON row of the int8 activation quantizer (kernels/int8_activations.h):
// quantize_act_row_scalar's bits, one block (8 columns, or 32 in the
// Natural layout) per step.
//
// Per block: max |x| with FMAXV (a NaN propagates, and an infinity is not
// finite: such rows go back to the scalar row, whose outputs are then the
// row's); inv = Q / max and the scale max / Q are the scalar row's f32
// divisions; q = round-half-even(x · inv) with FCVTNS (lrint in the default
// rounding mode); the residual x − scale · q is a multiply, then a subtract
// (the build has -ffp-contract=off, so they are not fused). The chunk's
// natural-order bytes then move to the layout with LD2 (Lut4Pairs: even and
// odd columns) or a 32-bit LD2 (BlockHalves: the first and the second four
// columns of each block); the lane scales and -128·Σq corrections come from
// the scalar row's act_lane_terms.
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "kernels/int8_activations.h"

namespace tessera::kernels {

bool quantize_act_row_neon(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax, int8_t* qr,
                           float* sr, int32_t* br, float* residual, int64_t block_cols) {
  const int64_t B = block_cols, nv = B / 4;
  if (B != kActBlock && (B != kActBlockCoarse || layout != ActLayout::Natural)) return false;
  const float q = static_cast<float>(qmax);
  const int64_t cc = act_chunk_cols(layout);
  alignas(16) int8_t natural[128];
  float block_scale[128 / kActBlock];
  for (int64_t m = 0; m < chunks; ++m) {
    std::memset(natural, 0, sizeof(natural));
    for (int64_t b = 0; b < cc / B; ++b) {
      block_scale[b] = 0.0f;
      const int64_t c0 = (m * (cc / B) + b) * B;
      if (c0 >= cols) continue;
      const int64_t n = std::min<int64_t>(B, cols - c0);
      alignas(16) float xb[kActBlockCoarse] = {};
      std::memcpy(xb, xr + c0, static_cast<size_t>(n) * sizeof(float));  // a partial block: zeros after
      float32x4_t x[kActBlockCoarse / 4];
      float32x4_t mx = vdupq_n_f32(0.0f);
      for (int64_t i = 0; i < nv; ++i) {
        x[i] = vld1q_f32(xb + 4 * i);
        mx = vmaxq_f32(mx, vabsq_f32(x[i]));  // FMAX: a NaN propagates
      }
      const float amax = vmaxvq_f32(mx);
      if (!std::isfinite(amax)) return false;
      int32x4_t qv[kActBlockCoarse / 4];
      for (int64_t i = 0; i < nv; ++i) qv[i] = vdupq_n_s32(0);
      if (amax != 0.0f) {
        const float inv = q / amax;
        if (!std::isfinite(inv)) return false;  // a subnormal max: the scalar row's x · inf
        block_scale[b] = amax / q;
        const float32x4_t vinv = vdupq_n_f32(inv);
        for (int64_t i = 0; i < nv; ++i) qv[i] = vcvtnq_s32_f32(vmulq_f32(x[i], vinv));
        for (int64_t i = 0; i < nv; i += 2) {
          const int16x8_t q16 = vcombine_s16(vmovn_s32(qv[i]), vmovn_s32(qv[i + 1]));
          vst1_s8(natural + b * B + 4 * i, vmovn_s16(q16));
        }
      }
      if (residual) {
        const float32x4_t s = vdupq_n_f32(block_scale[b]);
        alignas(16) float rb[kActBlockCoarse];
        for (int64_t i = 0; i < nv; ++i) vst1q_f32(rb + 4 * i, vsubq_f32(x[i], vmulq_f32(s, vcvtq_f32_s32(qv[i]))));
        std::memcpy(residual + c0, rb, static_cast<size_t>(n) * sizeof(float));
      }
    }
    int8_t* dst = qr + m * cc;
    switch (layout) {
      case ActLayout::Natural:
        std::memcpy(dst, natural, 64);
        break;
      case ActLayout::Lut4Pairs:  // even columns, then odd ones
        for (int i = 0; i < 4; ++i) {
          const int8x16x2_t v = vld2q_s8(natural + 32 * i);
          vst1q_s8(dst + 16 * i, v.val[0]);
          vst1q_s8(dst + 64 + 16 * i, v.val[1]);
        }
        break;
      case ActLayout::BlockHalves:  // columns 0-3 of every block, then 4-7
        for (int i = 0; i < 4; ++i) {
          const int32x4x2_t v = vld2q_s32(reinterpret_cast<const int32_t*>(natural + 32 * i));
          vst1q_s32(reinterpret_cast<int32_t*>(dst + 16 * i), v.val[0]);
          vst1q_s32(reinterpret_cast<int32_t*>(dst + 64 + 16 * i), v.val[1]);
        }
        break;
    }
    act_lane_terms(natural, block_scale, layout, sr + m * 16, br + m * 16, B);
  }
  return true;
}

}  // namespace tessera::kernels

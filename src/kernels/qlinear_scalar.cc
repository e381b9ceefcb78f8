// The scalar twins of the linear kernels, each contract written out one lane
// at a time: the integer-dot kernels (kernels/qlinear.h; the AVX2 and AVX-512
// kernels must give exactly these bits), the AMX bf16 GEMM
// (kernels/qlinear_amx.h) and the AVX2 int16 GEMM (kernels/qlinear_i16gemm.h).
#include <algorithm>
#include <cmath>

#include "kernels/qlinear.h"
#include "kernels/qlinear_amx.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/dot.h"

namespace tessera::kernels {

namespace {

// Activation byte of column c (of a row laid out as acts.layout).
inline int32_t act_value(const Int8Activations& a, const int8_t* q, int64_t c) { return q[act_position(a.layout, c)]; }

}  // namespace

void qlinear_scalar(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                    int64_t n_end, float* y, int64_t ldy) {
  const int64_t cc = act_chunk_cols(acts.layout), per_lane = cc / 16, cols = w.cols();
  for (int64_t n = n_begin; n < n_end; ++n) {
    for (int64_t t = 0; t < acts.rows; ++t) {
      float lanes[16] = {};
      for (int64_t m = 0; m < acts.chunks; ++m) {
        for (int j = 0; j < 16; ++j) {
          // Per chunk and lane: pass 0's sum, then pass 1's (the residual);
          // the lane's Σ a_q per pass too (blocked formats' offsets).
          const int64_t c0 = m * cc + j * per_lane;
          float t_sum = 0.0f, u_sum = 0.0f;
          for (int pass = 0; pass < acts.passes; ++pass) {
            const int8_t* q = acts.q_row(t, pass);
            int32_t sum = 0, q_sum = 0;
            for (int64_t k = 0; k < per_lane; ++k) {
              const int64_t c = c0 + k;
              if (c < cols) sum += w.value(n, c) * act_value(acts, q, c);
              if (c < cols) q_sum += act_value(acts, q, c);
            }
            const float s = acts.scale_row(t, pass)[m * 16 + j];
            if (!w.blocked()) {
              lanes[j] = std::fma(s, static_cast<float>(sum), lanes[j]);
            } else if (pass == 0) {
              t_sum = s * static_cast<float>(sum);
              u_sum = s * static_cast<float>(q_sum);
            } else {
              t_sum = std::fma(s, static_cast<float>(sum), t_sum);
              u_sum = std::fma(s, static_cast<float>(q_sum), u_sum);
            }
          }
          if (w.blocked()) {
            // A lane past the row's end (the zero half of a last chunk) has
            // no block: scale and offset 0, as the vector kernels load them.
            const int64_t b = c0 / w.block_cols();
            const bool in_row = c0 < cols;
            lanes[j] = std::fma(in_row ? w.block_scale(n, b) : 0.0f, t_sum, lanes[j]);
            if (w.block_offsets()) lanes[j] = std::fma(in_row ? w.block_offset(n, b) : 0.0f, u_sum, lanes[j]);
          }
        }
      }
      y[t * ldy + n] = qlinear_finish(lanes, w.out_scale(n), bias, n);
    }
  }
}

void qlinear_bf16_scalar(const QLinearWeights& w, const Bf16Activations& acts, const float* bias, int64_t n_begin,
                         int64_t n_end, float* y, int64_t ldy) {
  for (int64_t n = n_begin; n < n_end; ++n)
    for (int64_t t = 0; t < acts.rows; ++t) {
      float sum = 0.0f;
      for (int64_t c = 0; c < w.cols(); ++c) sum += bf16_to_f32(acts.at(t, c)) * static_cast<float>(w.value(n, c));
      y[t * ldy + n] = qlinear_output(sum, w.out_scale(n), bias, n);
    }
}

void qlinear_i16gemm_scalar(const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                            int64_t n_begin, int64_t n_end, float* y, int64_t ldy) {
  const int64_t cols = w.cols();
  for (int64_t n = n_begin; n < n_end; ++n)
    for (int64_t t = 0; t < acts.rows; ++t) {
      const int16_t* q = acts.q_row(t);
      float lanes[8] = {};
      for (int64_t c0 = 0, b = 0; c0 < cols; c0 += kI16Block, ++b) {
        int32_t sums[8] = {};
        for (int64_t c = c0; c < std::min(cols, c0 + kI16Block); ++c) sums[(c % 16) / 2] += w.value(n, c) * q[c];
        for (int j = 0; j < 8; ++j) lanes[j] = std::fma(static_cast<float>(sums[j]), acts.scale_row(t)[b], lanes[j]);
      }
      y[t * ldy + n] = qlinear_output(ref::reduce_lanes(lanes, 8), w.out_scale(n), bias, n);
    }
}

}  // namespace tessera::kernels

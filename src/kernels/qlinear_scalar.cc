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
          // Per chunk and lane: pass 0's sum, then pass 1's (the residual).
          for (int pass = 0; pass < acts.passes; ++pass) {
            const int8_t* q = acts.q_row(t, pass);
            int32_t sum = 0;
            for (int64_t k = 0; k < per_lane; ++k) {
              const int64_t c = m * cc + j * per_lane + k;
              if (c < cols) sum += w.value(n, c) * act_value(acts, q, c);
            }
            lanes[j] = std::fma(acts.scale_row(t, pass)[m * 16 + j], static_cast<float>(sum), lanes[j]);
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

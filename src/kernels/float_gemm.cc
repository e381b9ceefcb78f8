// Highway versions of float_gemm (kernels/float_gemm.h), compiled once per
// target as kernels/vector_ops.cc is; the table at the end picks one.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/float_gemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/aligned_vector.h"
#include "core/error.h"
#include "kernels/cpu_isa.h"
#include "kernels/float_gemm.h"

#ifndef TESSERA_UNROLL
#define TESSERA_UNROLL _Pragma("GCC unroll 16")
#endif

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET != HWY_SCALAR
namespace tessera::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(D()));
constexpr int64_t kPanel = 2 * kN;  // outputs per panel
constexpr int64_t kChunk = 256;      // columns per pass over a panel
constexpr int64_t kTokens = 6;       // tokens per micro-kernel
constexpr int64_t kTaskTokens = 48;  // tokens per pool task

// Tokens [0, MR) × the panel's 2 vectors of outputs over columns [k0, k1):
// acc from y (k0 > 0) or 0, then one FMA per column in order, back to y
// (`valid` of the panel's outputs are real; the rest go to a scratch row).
template <int MR>
void micro(const float* x, int64_t ldx, const float* panel, int64_t k0, int64_t k1, float* y, int64_t ldy,
           int64_t valid) {
  const D d;
  V acc[MR][2];
  alignas(64) float scratch[MR][kPanel];
  float* out[MR];
  TESSERA_UNROLL
  for (int r = 0; r < MR; ++r) {
    out[r] = valid == kPanel ? y + r * ldy : scratch[r];
    if (valid < kPanel) std::copy(y + r * ldy, y + r * ldy + valid, scratch[r]);
    acc[r][0] = k0 == 0 ? hn::Zero(d) : hn::LoadU(d, out[r]);
    acc[r][1] = k0 == 0 ? hn::Zero(d) : hn::LoadU(d, out[r] + kN);
  }
  for (int64_t k = k0; k < k1; ++k) {
    const V w0 = hn::Load(d, panel + k * kPanel), w1 = hn::Load(d, panel + k * kPanel + kN);
    TESSERA_UNROLL
    for (int r = 0; r < MR; ++r) {
      const V a = hn::Set(d, x[r * ldx + k]);
      acc[r][0] = hn::MulAdd(a, w0, acc[r][0]);
      acc[r][1] = hn::MulAdd(a, w1, acc[r][1]);
    }
  }
  TESSERA_UNROLL
  for (int r = 0; r < MR; ++r) {
    hn::StoreU(acc[r][0], d, out[r]);
    hn::StoreU(acc[r][1], d, out[r] + kN);
    if (valid < kPanel) std::copy(scratch[r], scratch[r] + valid, y + r * ldy);
  }
}

void gemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t tokens, const float* bias, float* y,
          int64_t ldy, ThreadPool* pool) {
  // Panels: [panel][column][kPanel outputs], zero past the last row.
  const int64_t panels = (rows + kPanel - 1) / kPanel;
  AlignedVector<float> packed(static_cast<size_t>(panels * cols * kPanel), 0.0f);
  auto pack = [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      for (int64_t j = 0; j < kPanel && p * kPanel + j < rows; ++j) {
        const float* row = w + (p * kPanel + j) * cols;
        float* dst = packed.data() + p * cols * kPanel + j;
        for (int64_t k = 0; k < cols; ++k) dst[k * kPanel] = row[k];
      }
  };
  auto task = [&](int64_t begin, int64_t end) {
    for (int64_t t0 = begin * kTaskTokens; t0 < std::min(tokens, end * kTaskTokens); t0 += kTaskTokens) {
      const int64_t t1 = std::min(tokens, t0 + kTaskTokens);
      for (int64_t k0 = 0; k0 < cols; k0 += kChunk) {
        const int64_t k1 = std::min(cols, k0 + kChunk);
        for (int64_t p = 0; p < panels; ++p) {
          const float* panel = packed.data() + p * cols * kPanel;
          const int64_t valid = std::min(kPanel, rows - p * kPanel);
          for (int64_t t = t0; t < t1; t += kTokens) {
            const float* xt = x + t * cols;
            float* yt = y + t * ldy + p * kPanel;
            switch (std::min(kTokens, t1 - t)) {
              case 6: micro<6>(xt, cols, panel, k0, k1, yt, ldy, valid); break;
              case 5: micro<5>(xt, cols, panel, k0, k1, yt, ldy, valid); break;
              case 4: micro<4>(xt, cols, panel, k0, k1, yt, ldy, valid); break;
              case 3: micro<3>(xt, cols, panel, k0, k1, yt, ldy, valid); break;
              case 2: micro<2>(xt, cols, panel, k0, k1, yt, ldy, valid); break;
              default: micro<1>(xt, cols, panel, k0, k1, yt, ldy, valid); break;
            }
          }
        }
      }
      if (bias)
        for (int64_t t = t0; t < t1; ++t)
          for (int64_t n = 0; n < rows; ++n) y[t * ldy + n] += bias[n];
    }
  };
  const int64_t tasks = (tokens + kTaskTokens - 1) / kTaskTokens;
  if (pool) {
    pool->parallel_for(panels, pack);
    pool->parallel_for(tasks, task);
  } else {
    pack(0, panels);
    task(0, tasks);
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels
#endif  // HWY_TARGET != HWY_SCALAR
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels {

namespace {

// The scalar twin: the contract's FMA chain, output by output.
void scalar_gemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t tokens, const float* bias,
                 float* y, int64_t ldy, ThreadPool* pool) {
  auto task = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t n = 0; n < rows; ++n) {
        float acc = 0.0f;
        for (int64_t k = 0; k < cols; ++k) acc = std::fma(x[t * cols + k], w[n * cols + k], acc);
        y[t * ldy + n] = bias ? acc + bias[n] : acc;
      }
  };
  if (pool) pool->parallel_for(tokens, task);
  else task(0, tokens);
}

}  // namespace

void float_gemm(Isa isa, const float* w, int64_t rows, int64_t cols, const float* x, int64_t tokens,
                const float* bias, float* y, int64_t ldy, ThreadPool* pool) {
  switch (vector_isa(isa)) {
#if HWY_TARGETS & HWY_AVX2
    case Isa::Avx2: return N_AVX2::gemm(w, rows, cols, x, tokens, bias, y, ldy, pool);
#endif
#if HWY_TARGETS & HWY_AVX3
    case Isa::Avx512: return N_AVX3::gemm(w, rows, cols, x, tokens, bias, y, ldy, pool);
#endif
#if HWY_TARGETS & HWY_NEON
    case Isa::Neon: return N_NEON::gemm(w, rows, cols, x, tokens, bias, y, ldy, pool);
#endif
    default: return scalar_gemm(w, rows, cols, x, tokens, bias, y, ldy, pool);
  }
}

}  // namespace tessera::kernels
#endif  // HWY_ONCE

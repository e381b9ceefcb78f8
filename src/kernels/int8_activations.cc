#include "kernels/int8_activations.h"

#include <atomic>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"

namespace tessera::kernels {

void act_lane_terms(const int8_t* natural, const float* block_scale, ActLayout layout, float* sr16, int32_t* br16,
                    int64_t block_cols) {
  const int per_lane = layout == ActLayout::Natural ? 4 : 8;
  for (int j = 0; j < 16; ++j) {
    int32_t sum = 0;
    for (int k = 0; k < per_lane; ++k) sum += natural[j * per_lane + k];
    br16[j] = -128 * sum;
    sr16[j] = block_scale[(j * per_lane) / block_cols];
  }
}

void quantize_act_row_scalar(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax, int8_t* qr,
                             float* sr, int32_t* br, float* residual, int64_t block_cols) {
  const float q = static_cast<float>(qmax);
  const int64_t cc = act_chunk_cols(layout), B = block_cols;
  const int64_t blocks = (cols + B - 1) / B;
  int8_t natural[128];
  float block_scale[128 / kActBlock];
  for (int64_t m = 0; m < chunks; ++m) {
    // Quantize this chunk's blocks in column order.
    std::memset(natural, 0, sizeof(natural));
    for (int64_t b = 0; b < cc / B; ++b) {
      const int64_t block = m * (cc / B) + b;
      block_scale[b] = 0.0f;
      if (block >= blocks) continue;
      const int64_t c0 = block * B, c1 = std::min(cols, c0 + B);
      float amax = 0.0f;
      bool nan = false;
      for (int64_t c = c0; c < c1; ++c) {
        amax = std::max(amax, std::fabs(xr[c]));
        nan = nan || std::isnan(xr[c]);
      }
      if (nan) amax = xr[c0] + std::numeric_limits<float>::quiet_NaN();  // std::max drops NaNs; keep one
      if (!std::isfinite(amax)) {
        block_scale[b] = amax + xr[c0] * 0.0f;  // inf or NaN: the output becomes NaN, as it should
        if (residual)
          for (int64_t c = c0; c < c1; ++c) residual[c] = 0.0f;
        continue;
      }
      if (amax != 0.0f) {
        const float inv = q / amax;
        block_scale[b] = amax / q;
        for (int64_t c = c0; c < c1; ++c)
          natural[b * B + (c - c0)] = static_cast<int8_t>(std::lrint(xr[c] * inv));
      }
      if (residual)
        for (int64_t c = c0; c < c1; ++c)
          residual[c] = xr[c] - block_scale[b] * static_cast<float>(natural[b * B + (c - c0)]);
    }
    int8_t* dst = qr + m * cc;
    for (int64_t k = 0; k < cc; ++k) dst[act_position(layout, k)] = natural[k];
    act_lane_terms(natural, block_scale, layout, sr + m * 16, br + m * 16, B);
  }
}

namespace {

void quantize_row(Isa isa, const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax, int8_t* qr,
                  float* sr, int32_t* br, float* residual, int64_t block_cols) {
#if TESSERA_X86
  if ((isa == Isa::Avx512 || isa == Isa::Amx) && qmax == kActQmax &&
      quantize_act_row_avx512(xr, cols, layout, chunks, qr, sr, br, residual, block_cols))
    return;
  if (isa == Isa::Avx2 && quantize_act_row_avx2(xr, cols, layout, chunks, qmax, qr, sr, br, residual, block_cols))
    return;
#endif
#if TESSERA_ARM64
  if (isa == Isa::Neon && quantize_act_row_neon(xr, cols, layout, chunks, qmax, qr, sr, br, residual, block_cols))
    return;
#endif
  quantize_act_row_scalar(xr, cols, layout, chunks, qmax, qr, sr, br, residual, block_cols);
}

}  // namespace

void activation_residual(Isa isa, const float* x, int64_t cols, float* residual) {
  const int64_t chunks = (cols + 63) / 64;
  // The quantized row itself is not needed: per-thread buffers, grown once
  // (the output head calls this twice per decode step).
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> scales;
  thread_local std::vector<int32_t> bias;
  if (q.size() < static_cast<size_t>(chunks * 64)) {
    q.resize(static_cast<size_t>(chunks * 64));
    scales.resize(static_cast<size_t>(chunks * 16));
    bias.resize(static_cast<size_t>(chunks * 16));
  }
  quantize_row(isa, x, cols, ActLayout::Natural, chunks, kActQmax, q.data(), scales.data(), bias.data(), residual,
               kActBlock);
}

void quantize_activations(Isa isa, const float* x, int64_t rows, int64_t cols, ActLayout layout, int passes,
                          Int8Activations& out, int qmax, int64_t block_cols) {
  if (block_cols != kActBlock && block_cols != kActBlockCoarse)
    fail("", "int8 activations", "{} columns per scale ({} or {} allowed)", block_cols, kActBlock, kActBlockCoarse);
  if (passes < 1 || passes > kMaxActPasses) fail("", "int8 activations", "{} passes (1 or 2 allowed)", passes);
  if (qmax < 1 || qmax > kActQmax) fail("", "int8 activations", "qmax {} (1..127 allowed)", qmax);
  static std::atomic<uint64_t> versions{0};
  out.version = ++versions;
  out.passes = passes;
  out.qmax = qmax;
  out.block_cols = block_cols;
  const int64_t cc = act_chunk_cols(layout);
  out.layout = layout;
  out.rows = rows;
  out.cols = cols;
  out.chunks = (cols + cc - 1) / cc;
  const int64_t row_bytes = out.row_bytes();
  out.q.resize(static_cast<size_t>(rows * passes * row_bytes));
  out.scale16.resize(static_cast<size_t>(rows * passes * out.chunks * 16));
  out.bias16.resize(static_cast<size_t>(rows * passes * out.chunks * 16));
  static_assert(kMaxActPasses == 2);  // pass 1 reads the residual pass 0 wrote
  thread_local std::vector<float> residual;
  if (passes > 1 && residual.size() < static_cast<size_t>(cols)) residual.resize(static_cast<size_t>(cols));
  for (int64_t t = 0; t < rows; ++t)
    for (int pass = 0; pass < passes; ++pass) {
      const int64_t i = t * passes + pass;
      quantize_row(isa, pass == 0 ? x + t * cols : residual.data(), cols, layout, out.chunks, qmax,
                   out.q.data() + i * row_bytes,
                   out.scale16.data() + i * out.chunks * 16, out.bias16.data() + i * out.chunks * 16,
                   pass + 1 < passes ? residual.data() : nullptr, block_cols);
    }
}

}  // namespace tessera::kernels

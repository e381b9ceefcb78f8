#include "kernels/int16_activations.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::kernels {

void quantize_int16_row_scalar(const float* xr, int64_t cols, int16_t* qr, float* sr) {
  for (int64_t c0 = 0, b = 0; c0 < cols; c0 += kI16Block, ++b) {
    const int64_t c1 = std::min(cols, c0 + kI16Block);
    float amax = 0.0f;
    bool finite = true;
    for (int64_t c = c0; c < c1; ++c) {
      finite = finite && std::isfinite(xr[c]);
      amax = std::max(amax, std::fabs(xr[c]));
    }
    const float inv = 32767.0f / amax;
    if (!finite || amax == 0.0f || !std::isfinite(inv)) {
      sr[b] = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      std::fill(qr + c0, qr + c1, int16_t{0});
      continue;
    }
    sr[b] = amax / 32767.0f;
    for (int64_t c = c0; c < c1; ++c) qr[c] = static_cast<int16_t>(std::lrint(xr[c] * inv));
  }
}

void prepare_int16_activations(int64_t rows, int64_t cols, Int16Activations& out) {
  out.rows = rows;
  out.cols = cols;
  out.blocks = (cols + kI16Block - 1) / kI16Block;
  out.q.resize(static_cast<size_t>(rows * cols));
  out.scale.resize(static_cast<size_t>(rows * out.blocks));
}

void quantize_int16_rows(Isa isa, const float* x, int64_t t_begin, int64_t t_end, Int16Activations& out) {
  for (int64_t t = t_begin; t < t_end; ++t) {
    const float* xr = x + t * out.cols;
    int16_t* qr = out.q.data() + t * out.cols;
    float* sr = out.scale.data() + t * out.blocks;
#if TESSERA_X86
    if (isa != Isa::Scalar && isa_supported(Isa::Avx2) && quantize_int16_row_avx2(xr, out.cols, qr, sr)) continue;
#endif
    quantize_int16_row_scalar(xr, out.cols, qr, sr);
  }
}

int64_t gather_tile_scales(const Int16Activations& a, int tile, std::vector<float>& out) {
  const int64_t tiles = a.rows / tile;
  out.resize(static_cast<size_t>(tiles * tile * a.blocks));
  for (int64_t k = 0; k < tiles; ++k)
    for (int64_t b = 0; b < a.blocks; ++b)
      for (int t = 0; t < tile; ++t) out[(k * a.blocks + b) * tile + t] = a.scale_row(k * tile + t)[b];
  return tiles * tile;
}

}  // namespace tessera::kernels

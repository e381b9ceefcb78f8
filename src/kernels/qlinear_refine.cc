#include "kernels/qlinear_refine.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::kernels {

int64_t refine_top_outputs(Isa isa, const QLinearWeights& w, const float* x, int64_t rows, const float* bias,
                           float* y, int64_t ldy, RefineScratch& s) {
  const int64_t n = w.rows(), cols = w.cols();
  s.residual1.resize(static_cast<size_t>(cols));
  s.residual2.resize(static_cast<size_t>(cols));
  s.block_out.resize(static_cast<size_t>(n));  // indexed by output, like y's row
  int64_t refined = 0;
  for (int64_t t = 0; t < rows; ++t) {
    const float* xt = x + t * cols;
    float* yt = y + t * ldy;
    activation_residual(isa, xt, cols, s.residual1.data());
    activation_residual(isa, s.residual1.data(), cols, s.residual2.data());
    double x1 = 0, e1 = 0, e2 = 0;
    for (int64_t c = 0; c < cols; ++c) {
      x1 += std::fabs(xt[c]);
      e1 += std::fabs(s.residual1[c]);
      e2 += std::fabs(s.residual2[c]);
    }
    const double rho = 1e-5 * (x1 + e1);
    const float* out_scale = w.out_scale_data();
    auto W = [&](int64_t m) { return 127.0 * std::fabs(static_cast<double>(out_scale[m])); };
    double best_lower = -std::numeric_limits<double>::infinity(), b2_max = 0;
    for (int64_t m = 0; m < n; ++m) {
      const double wm = W(m);
      best_lower = std::max(best_lower, static_cast<double>(yt[m]) - wm * (e1 + rho));
      b2_max = std::max(b2_max, wm * (e2 + rho));
    }
    if (!std::isfinite(best_lower)) continue;  // NaN / inf logits: nothing to rank
    s.blocks.clear();
    for (int64_t m = 0; m < n; ++m) {
      const double wm = W(m);
      if (static_cast<double>(yt[m]) + wm * (e1 + e2 + 2 * rho) + b2_max >= best_lower &&
          (s.blocks.empty() || s.blocks.back() != m / 4))
        s.blocks.push_back(m / 4);
    }
    quantize_activations(isa, xt, 1, cols, w.layout(), 2, s.acts);
    for (int64_t blk : s.blocks) {
      const int64_t b0 = blk * 4, b1 = std::min(n, b0 + 4);
      qlinear(isa, w, s.acts, bias, b0, b1, s.block_out.data(), 0);
      std::copy(s.block_out.begin() + b0, s.block_out.begin() + b1, yt + b0);
      refined += b1 - b0;
    }
  }
  return refined;
}

}  // namespace tessera::kernels

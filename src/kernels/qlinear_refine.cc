#include "kernels/qlinear_refine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace tessera::kernels {

namespace {

// x rounded up to a float.
float float_up(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

// Blocked rows (w = s_b · code + o_b): exact integer Σ code and Σ code² per
// block, then the norm and the largest magnitude in double.
void blocked_refine_head(const QLinearWeights& w, RefineHead& head) {
  const int64_t n = w.rows(), cols = w.cols(), bc = w.block_cols();
  for (int64_t r = 0; r < n; ++r) {
    double sq = 0, biggest = 0;
    for (int64_t b = 0; b < cols / bc; ++b) {
      int64_t sum = 0, sum_sq = 0, max_abs = 0;
      for (int64_t c = b * bc; c < (b + 1) * bc; ++c) {
        const int64_t v = w.value(r, c);
        sum += v;
        sum_sq += v * v;
        max_abs = std::max<int64_t>(max_abs, v < 0 ? -v : v);
      }
      const double s = w.block_scale(r, b), o = w.block_offsets() ? w.block_offset(r, b) : 0.0;
      sq += s * s * static_cast<double>(sum_sq) + 2 * s * o * static_cast<double>(sum) + o * o * static_cast<double>(bc);
      biggest = std::max(biggest, std::fabs(s) * static_cast<double>(max_abs) + std::fabs(o));
    }
    // sq is a sum of squares, ≥ 0 up to the double roundings; 1e-12 covers them.
    head.norms[static_cast<size_t>(r)] = float_up(std::sqrt(std::max(sq, 0.0)) * (1 + 1e-12));
    const float scale = float_up(biggest / 127.0 * (1 + 1e-12));
    head.scales[static_cast<size_t>(r)] = scale;
    head.max_scale = std::max(head.max_scale, static_cast<double>(scale));
  }
}

}  // namespace

RefineHead make_refine_head(const QLinearWeights& w) {
  const int64_t n = w.rows(), cols = w.cols();
  RefineHead head;
  head.norms.resize(static_cast<size_t>(n));
  head.scales.resize(static_cast<size_t>(n));
  if (w.blocked()) {
    blocked_refine_head(w, head);
    return head;
  }
  for (int64_t r = 0; r < n; ++r) {
    int64_t sq = 0;  // Σ w_q², exact
    const uint8_t* row = w.row(r);
    if (w.format() == WeightFormat::Int8) {
      // int32 sums of up to 2^16 squares (each ≤ 2^14) cannot overflow and
      // vectorize; a Gemma 3 head is 168 MB.
      for (int64_t c0 = 0; c0 < cols; c0 += 65536) {
        int32_t part = 0;
        for (int64_t c = c0; c < std::min(cols, c0 + 65536); ++c) {
          const int32_t v = static_cast<int8_t>(row[c]);
          part += v * v;
        }
        sq += part;
      }
    } else if (w.bits() == 4) {  // count the palette indices: two per byte
      int64_t count[16] = {};
      for (int64_t c = 0; c < cols / 2; ++c) {
        ++count[row[c] & 15];
        ++count[row[c] >> 4];
      }
      const int8_t* table = w.table(r);
      for (int i = 0; i < 16; ++i) sq += count[i] * table[i] * table[i];
    } else {
      for (int64_t c = 0; c < cols; ++c) sq += w.value(r, c) * w.value(r, c);
    }
    const double scale = std::fabs(static_cast<double>(w.out_scale(r)));
    head.norms[static_cast<size_t>(r)] = float_up(scale * std::sqrt(static_cast<double>(sq)));
    head.scales[static_cast<size_t>(r)] = w.out_scale(r);
    head.max_scale = std::max(head.max_scale, scale);
  }
  return head;
}

void refine_prepare(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* x, int64_t rows,
                    int64_t max_ranges, RefineScratch& s) {
  const int64_t cols = w.cols();
  s.residual1.resize(static_cast<size_t>(cols));
  s.residual2.resize(static_cast<size_t>(cols));
  s.margins.resize(static_cast<size_t>(rows));
  s.b2_upper.resize(static_cast<size_t>(rows));
  for (int64_t t = 0; t < rows; ++t) {
    const float* xt = x + t * cols;
    activation_residual(isa, xt, cols, s.residual1.data());
    activation_residual(isa, s.residual1.data(), cols, s.residual2.data());
    double x1 = 0;
    RefineMargins g{0, 0, 0, 0, 0};
    for (int64_t c = 0; c < cols; ++c) {
      const double r1 = s.residual1[c], r2 = s.residual2[c];
      x1 += std::fabs(xt[c]);
      g.e1 += std::fabs(r1);
      g.e2 += std::fabs(r2);
      g.q1 += r1 * r1;
      g.q2 += r2 * r2;
    }
    g.q1 = std::sqrt(g.q1);
    g.q2 = std::sqrt(g.q2);
    g.rho = 1e-5 * (x1 + g.e1);
    s.margins[static_cast<size_t>(t)] = g;
    // B2_n = min(W·e2, N·q2) + W·ρ ≤ W_max·e2 + W_max·ρ, the double
    // operations being monotone.
    const double w_max = 127.0 * head.max_scale;
    s.b2_upper[static_cast<size_t>(t)] = w_max * g.e2 + w_max * g.rho;
  }
  if (static_cast<int64_t>(s.ranges.size()) < max_ranges) s.ranges.resize(static_cast<size_t>(max_ranges));
  s.ranges_used->store(0, std::memory_order_relaxed);
}

void refine_scan_range(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* y, int64_t ldy,
                       int64_t rows, int64_t n_begin, int64_t n_end, RefineScratch& s) {
  const int64_t slot = s.ranges_used->fetch_add(1, std::memory_order_relaxed);
  if (slot >= static_cast<int64_t>(s.ranges.size())) fail("", "refine", "more output ranges than prepared ({})", s.ranges.size());
  RefineScratch::Range& r = s.ranges[static_cast<size_t>(slot)];
  r.bounds.resize(static_cast<size_t>(rows));
  r.candidates.clear();
  const int64_t len = n_end - n_begin, blocks_per_row = (w.rows() + 3) / 4;
  const float* scale = head.scales.data() + n_begin;
  const float* norm = head.norms.data() + n_begin;
  for (int64_t t = 0; t < rows; ++t) {
    const float* yt = y + t * ldy + n_begin;
    const RefineMargins& g = s.margins[static_cast<size_t>(t)];
    const RefineBounds local = refine_bounds(isa, yt, scale, norm, len, g);
    r.bounds[static_cast<size_t>(t)] = local;
    if (!std::isfinite(local.best_lower)) continue;  // the whole row is ruled on in refine_plan_row
    // Against the range's own best lower bound and the row's b2 upper
    // bound: every final candidate of the range passes (the final test
    // adds less, to more).
    const size_t from = r.candidates.size();
    refine_candidates(isa, yt, scale, norm, len, g, {local.best_lower, s.b2_upper[static_cast<size_t>(t)]},
                      r.candidates);
    for (size_t i = from; i < r.candidates.size(); ++i) r.candidates[i] += t * blocks_per_row + n_begin / 4;
  }
}

int64_t refine_plan_row(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* x, const float* y,
                        int64_t ldy, int64_t t, RefineScratch& s) {
  const int64_t n = w.rows(), cols = w.cols(), blocks_per_row = (n + 3) / 4;
  const int64_t used = std::min<int64_t>(s.ranges_used->load(std::memory_order_relaxed), s.ranges.size());
  RefineBounds all{-std::numeric_limits<double>::infinity(), 0.0};
  for (int64_t i = 0; i < used; ++i) {  // max is exact: any order of ranges
    const RefineBounds& b = s.ranges[static_cast<size_t>(i)].bounds[static_cast<size_t>(t)];
    all.best_lower = std::max(all.best_lower, b.best_lower);
    all.b2_max = std::max(all.b2_max, b.b2_max);
  }
  s.blocks.clear();
  if (!std::isfinite(all.best_lower)) return 0;  // NaN / inf logits: nothing to rank
  const float* yt = y + t * ldy;
  const RefineMargins& g = s.margins[static_cast<size_t>(t)];
  for (int64_t i = 0; i < used; ++i) {
    for (int64_t c : s.ranges[static_cast<size_t>(i)].candidates) {
      if (c / blocks_per_row != t) continue;
      const int64_t b0 = (c % blocks_per_row) * 4;
      bool any = false;
      for (int64_t m = b0; m < std::min(n, b0 + 4); ++m)
        any |= refine_is_candidate(yt[m], head.scales[static_cast<size_t>(m)], head.norms[static_cast<size_t>(m)], g, all);
      if (any) s.blocks.push_back(b0 / 4);
    }
  }
  std::sort(s.blocks.begin(), s.blocks.end());
  if (!s.blocks.empty()) quantize_activations(isa, x + t * cols, 1, cols, w.layout(), 2, s.acts);
  return static_cast<int64_t>(s.blocks.size());
}

void refine_blocks(Isa isa, const QLinearWeights& w, const RefineScratch& s, const float* bias, int64_t begin,
                   int64_t end, float* yt) {
  const int64_t n = w.rows();
  for (int64_t i = begin; i < end; ++i) {
    const int64_t b0 = s.blocks[static_cast<size_t>(i)] * 4;
    qlinear(isa, w, s.acts, bias, b0, std::min(n, b0 + 4), yt, 0);
  }
}

int64_t refine_top_outputs(Isa isa, const QLinearWeights& w, const RefineHead& head, const float* x, int64_t rows,
                           const float* bias, float* y, int64_t ldy, RefineScratch& s) {
  const int64_t n = w.rows();
  refine_prepare(isa, w, head, x, rows, 1, s);
  refine_scan_range(isa, w, head, y, ldy, rows, 0, n, s);
  int64_t refined = 0;
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t blocks = refine_plan_row(isa, w, head, x, y, ldy, t, s);
    refine_blocks(isa, w, s, bias, 0, blocks, y + t * ldy);
    for (int64_t i = 0; i < blocks; ++i) refined += std::min<int64_t>(4, n - s.blocks[static_cast<size_t>(i)] * 4);
  }
  return refined;
}

}  // namespace tessera::kernels

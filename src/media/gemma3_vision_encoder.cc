#include "media/gemma3_vision_encoder.h"

#include <algorithm>
#include <cmath>

#include "core/cpu_cores.h"
#include "core/error.h"
#include "kernels/cpu_isa.h"
#include "kernels/float_gemm.h"

namespace tessera {

namespace {

// LayerNorm of each of `rows` rows of width d (mean and variance in double,
// the rest in f32 as the reference).
void layer_norm(const float* x, int64_t rows, int64_t d, const std::vector<float>& w, const std::vector<float>& b,
                float eps, float* y, ThreadPool& pool) {
  pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* r = x + t * d;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < d; ++i) sum += r[i];
      const double mean = sum / static_cast<double>(d);
      for (int64_t i = 0; i < d; ++i) sq += (r[i] - mean) * (r[i] - mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps));
      const auto m = static_cast<float>(mean);
      for (int64_t i = 0; i < d; ++i) y[t * d + i] = (r[i] - m) * inv * w[static_cast<size_t>(i)] + b[static_cast<size_t>(i)];
    }
  }, 8);
}

float gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(u));
}

}  // namespace

Gemma3VisionEncoder::Gemma3VisionEncoder(std::shared_ptr<const Gemma3VisionReference> weights, int threads)
    : weights_(std::move(weights)), pool_(std::make_unique<ThreadPool>(threads > 0 ? threads : physical_core_count())) {
  const Gemma3VisionConfig& c = weights_->config();
  const std::vector<float>& p = weights_->projection();
  projection_t_.resize(p.size());
  for (int64_t i = 0; i < c.hidden; ++i)
    for (int64_t o = 0; o < c.text_hidden; ++o)
      projection_t_[static_cast<size_t>(o * c.hidden + i)] = p[static_cast<size_t>(i * c.text_hidden + o)];
}

void Gemma3VisionEncoder::linear(const std::vector<float>& w, const std::vector<float>* bias, int64_t out, int64_t in,
                                 const float* x, int64_t rows, float* y) const {
  kernels::float_gemm(active_isa(), w.data(), out, in, x, rows, bias ? bias->data() : nullptr, y, out, pool_.get());
}

std::vector<float> Gemma3VisionEncoder::image_features(const PixelValues& px) const {
  const Gemma3VisionConfig& c = config();
  if (px.channels != 3 || px.height != c.image_size || px.width != c.image_size)
    fail("image", "pixel values", "{} × {} × {}, the tower takes 3 × {} × {}", px.channels, px.height, px.width,
         c.image_size, c.image_size);
  const Gemma3VisionReference& W = *weights_;
  const int64_t h = c.hidden, p = c.patch_size, g = c.grid(), n = g * g, s = c.image_size, pp = 3 * p * p;
  ThreadPool& pool = *pool_;
  // Patches as rows of [channel][i][j] (the conv kernel's own order), then
  // the patch embedding as a linear, plus positions.
  std::vector<float> patches(static_cast<size_t>(n * pp));
  for (int64_t py = 0; py < g; ++py)
    for (int64_t pxi = 0; pxi < g; ++pxi)
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t i = 0; i < p; ++i)
          for (int64_t j = 0; j < p; ++j)
            patches[static_cast<size_t>((py * g + pxi) * pp + (ch * p + i) * p + j)] =
                px.values[static_cast<size_t>((ch * s + py * p + i) * s + pxi * p + j)];
  std::vector<float> x(static_cast<size_t>(n * h));
  linear(W.patch_weight(), &W.patch_bias(), h, pp, patches.data(), n, x.data());
  for (size_t i = 0; i < x.size(); ++i) x[i] += W.positions()[i];

  const int64_t heads = c.heads, hd = h / heads;
  std::vector<float> a(x.size()), q(x.size()), k(x.size()), v(x.size()), ctx(x.size()), o(x.size());
  std::vector<float> m(static_cast<size_t>(n * c.intermediate));
  std::vector<float> qh(static_cast<size_t>(n * hd)), kh(qh.size()), vt(qh.size());
  std::vector<float> scores(static_cast<size_t>(n * n));
  const Isa isa = active_isa();
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  for (const Gemma3VisionReference::Layer& L : W.layers()) {
    layer_norm(x.data(), n, h, L.norm1.weight, L.norm1.bias, c.layer_norm_eps, a.data(), pool);
    linear(L.q.weight, &L.q.bias, h, h, a.data(), n, q.data());
    linear(L.k.weight, &L.k.bias, h, h, a.data(), n, k.data());
    linear(L.v.weight, &L.v.bias, h, h, a.data(), n, v.data());
    // Attention head by head as two GEMMs: scores S = Q Kᵀ (K's rows as the
    // weights), softmax along each row, then ctx = P V (Vᵀ's rows as the weights).
    for (int64_t head = 0; head < heads; ++head) {
      pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t)
          for (int64_t e = 0; e < hd; ++e) {
            const size_t at = static_cast<size_t>(t * h + head * hd + e);
            qh[static_cast<size_t>(t * hd + e)] = q[at] * scale;
            kh[static_cast<size_t>(t * hd + e)] = k[at];
            vt[static_cast<size_t>(e * n + t)] = v[at];
          }
      }, 64);
      kernels::float_gemm(isa, kh.data(), n, hd, qh.data(), n, nullptr, scores.data(), n, &pool);
      pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          float* row = scores.data() + t * n;
          const float top = *std::max_element(row, row + n);
          double total = 0;
          for (int64_t j = 0; j < n; ++j) total += (row[j] = std::exp(row[j] - top));
          const auto inv = static_cast<float>(1.0 / total);
          for (int64_t j = 0; j < n; ++j) row[j] *= inv;
        }
      }, 16);
      kernels::float_gemm(isa, vt.data(), hd, n, scores.data(), n, nullptr, ctx.data() + head * hd, h, &pool);
    }
    linear(L.o.weight, &L.o.bias, h, h, ctx.data(), n, o.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    layer_norm(x.data(), n, h, L.norm2.weight, L.norm2.bias, c.layer_norm_eps, a.data(), pool);
    linear(L.fc1.weight, &L.fc1.bias, c.intermediate, h, a.data(), n, m.data());
    pool.parallel_for(static_cast<int64_t>(m.size()), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) m[static_cast<size_t>(i)] = gelu_tanh(m[static_cast<size_t>(i)]);
    }, 1 << 14);
    linear(L.fc2.weight, &L.fc2.bias, h, c.intermediate, m.data(), n, o.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  }
  layer_norm(x.data(), n, h, W.post_norm().weight, W.post_norm().bias, c.layer_norm_eps, a.data(), pool);
  // Projector: average k × k squares of the grid, RMSNorm (its 1 + w), project.
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(c.tokens_per_image))));
  const int64_t kk = g / side, tokens = c.tokens_per_image;
  std::vector<float> normed(static_cast<size_t>(tokens * h));
  for (int64_t ty = 0; ty < side; ++ty)
    for (int64_t tx = 0; tx < side; ++tx) {
      const int64_t t = ty * side + tx;
      std::vector<double> pooled(static_cast<size_t>(h), 0.0);
      for (int64_t i = 0; i < kk; ++i)
        for (int64_t j = 0; j < kk; ++j) {
          const float* r = a.data() + ((ty * kk + i) * g + tx * kk + j) * h;
          for (int64_t e = 0; e < h; ++e) pooled[static_cast<size_t>(e)] += r[e];
        }
      double sq = 0;
      for (double& e : pooled) {
        e = static_cast<float>(e / static_cast<double>(kk * kk));  // the pooled value in f32, as the reference's
        sq += e * e;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(h) + c.layer_norm_eps);
      for (int64_t e = 0; e < h; ++e)
        normed[static_cast<size_t>(t * h + e)] =
            static_cast<float>(pooled[static_cast<size_t>(e)] * inv * W.soft_scale()[static_cast<size_t>(e)]);
    }
  std::vector<float> features(static_cast<size_t>(tokens * c.text_hidden));
  linear(projection_t_, nullptr, c.text_hidden, h, normed.data(), tokens, features.data());
  return features;
}

}  // namespace tessera

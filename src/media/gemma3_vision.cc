#include "media/gemma3_vision.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/ggml_dequant.h"
#include "core/json_file.h"
#include "sources/safetensors.h"

namespace tessera {

namespace {

// Checkpoints name the tower and projector with or without transformers'
// "model." wrapper and SigLIP's "vision_model." level.
constexpr std::string_view kTowerPrefixes[] = {"model.vision_tower.", "vision_tower.vision_model.",
                                               "model.vision_tower.vision_model.", "vision_tower."};
constexpr std::string_view kProjectorPrefixes[] = {"model.multi_modal_projector.", "multi_modal_projector."};

struct Tensors {
  const SafetensorsCheckpoint& checkpoint;
  std::string_view tower, projector;

  std::vector<float> get(std::string_view prefix, const std::string& name, int64_t elements) const {
    const std::string full = std::string(prefix) + name;
    const TensorView* t = checkpoint.find(full);
    if (!t) fail("vision weights", full, "missing");
    std::vector<float> v = dequantize(*t);
    if (static_cast<int64_t>(v.size()) != elements)
      fail("vision weights", full, "{} values, expected {}", v.size(), elements);
    return v;
  }
};

int64_t positive(const nlohmann::json& c, const char* key) {
  if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<int64_t>() <= 0)
    fail("config.json", key, "must be a positive integer");
  return c[key].get<int64_t>();
}

float layer_norm_value(float x, float mean, float inv, float w, float b) { return (x - mean) * inv * w + b; }

// y[t] = LayerNorm(x[t]) for each of `n` rows of width `d`.
std::vector<float> layer_norm(const std::vector<float>& x, int64_t n, int64_t d, const std::vector<float>& w,
                              const std::vector<float>& b, float eps) {
  std::vector<float> y(x.size());
  for (int64_t t = 0; t < n; ++t) {
    const float* r = x.data() + t * d;
    double sum = 0;
    for (int64_t i = 0; i < d; ++i) sum += r[i];
    const double mean = sum / static_cast<double>(d);
    double sq = 0;
    for (int64_t i = 0; i < d; ++i) sq += (r[i] - mean) * (r[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps));
    for (int64_t i = 0; i < d; ++i)
      y[static_cast<size_t>(t * d + i)] =
          layer_norm_value(r[i], static_cast<float>(mean), inv, w[static_cast<size_t>(i)], b[static_cast<size_t>(i)]);
  }
  return y;
}

// y = x Wᵀ + b for n rows.
template <class L>
std::vector<float> linear(const std::vector<float>& x, int64_t n, const L& l) {
  std::vector<float> y(static_cast<size_t>(n * l.out));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < l.out; ++o) {
      double acc = l.bias.empty() ? 0.0 : l.bias[static_cast<size_t>(o)];
      const float* w = l.weight.data() + o * l.in;
      const float* r = x.data() + t * l.in;
      for (int64_t i = 0; i < l.in; ++i) acc += static_cast<double>(w[i]) * r[i];
      y[static_cast<size_t>(t * l.out + o)] = static_cast<float>(acc);
    }
  return y;
}

float gelu_tanh(float x) {
  const double u = 0.7978845608028654 * (x + 0.044715 * static_cast<double>(x) * x * x);
  return static_cast<float>(0.5 * x * (1.0 + std::tanh(u)));
}

}  // namespace

Gemma3VisionReference Gemma3VisionReference::load(const std::string& directory) {
  const nlohmann::json config = read_json_file(directory + "/config.json", "config.json");
  if (!config.contains("vision_config") || !config["vision_config"].is_object())
    fail("config.json", "vision_config", "missing: not a multimodal Gemma 3 checkpoint");
  const nlohmann::json& v = config["vision_config"];
  Gemma3VisionReference r;
  Gemma3VisionConfig& c = r.config_;
  c.hidden = positive(v, "hidden_size");
  c.intermediate = positive(v, "intermediate_size");
  c.layers = positive(v, "num_hidden_layers");
  c.heads = positive(v, "num_attention_heads");
  c.image_size = positive(v, "image_size");
  c.patch_size = positive(v, "patch_size");
  c.layer_norm_eps = v.value("layer_norm_eps", 1e-6f);
  if (v.value("hidden_act", std::string("gelu_pytorch_tanh")) != "gelu_pytorch_tanh")
    fail("config.json", "vision_config.hidden_act", "only gelu_pytorch_tanh is supported");
  c.tokens_per_image = positive(config, "mm_tokens_per_image");
  if (!config.contains("text_config")) fail("config.json", "text_config", "missing");
  c.text_hidden = positive(config["text_config"], "hidden_size");
  if (c.hidden % c.heads != 0) fail("config.json", "vision_config", "hidden_size is not a multiple of the heads");
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(c.tokens_per_image))));
  if (c.image_size % c.patch_size != 0 || side * side != c.tokens_per_image || c.grid() % side != 0)
    fail("config.json", "mm_tokens_per_image", "{} tokens do not pool a {} × {} patch grid evenly", c.tokens_per_image,
         c.grid(), c.grid());

  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(directory);
  std::string_view tower, projector;
  for (std::string_view p : kTowerPrefixes)
    if (tower.empty() && checkpoint.find(std::string(p) + "post_layernorm.weight")) tower = p;
  for (std::string_view p : kProjectorPrefixes)
    if (projector.empty() && checkpoint.find(std::string(p) + "mm_input_projection_weight")) projector = p;
  if (tower.empty()) fail(directory, "vision_tower", "no vision tower weights (post_layernorm.weight)");
  if (projector.empty()) fail(directory, "multi_modal_projector", "no projector weights");
  const Tensors w{checkpoint, tower, projector};
  const int64_t h = c.hidden, p = c.patch_size, g = c.grid();
  r.patch_weight_ = w.get(tower, "embeddings.patch_embedding.weight", h * 3 * p * p);
  r.patch_bias_ = w.get(tower, "embeddings.patch_embedding.bias", h);
  r.positions_ = w.get(tower, "embeddings.position_embedding.weight", g * g * h);
  auto norm = [&](const std::string& name) {
    return Norm{w.get(tower, name + ".weight", h), w.get(tower, name + ".bias", h)};
  };
  auto lin = [&](const std::string& name, int64_t out, int64_t in) {
    return Linear{w.get(tower, name + ".weight", out * in), w.get(tower, name + ".bias", out), out, in};
  };
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string base = fmt::format("encoder.layers.{}.", l);
    r.layers_.push_back({norm(base + "layer_norm1"), norm(base + "layer_norm2"), lin(base + "self_attn.q_proj", h, h),
                         lin(base + "self_attn.k_proj", h, h), lin(base + "self_attn.v_proj", h, h),
                         lin(base + "self_attn.out_proj", h, h), lin(base + "mlp.fc1", c.intermediate, h),
                         lin(base + "mlp.fc2", h, c.intermediate)});
  }
  r.post_norm_ = norm("post_layernorm");
  r.soft_norm_ = w.get(projector, "mm_soft_emb_norm.weight", h);
  r.projection_ = w.get(projector, "mm_input_projection_weight", h * c.text_hidden);
  return r;
}

std::vector<float> Gemma3VisionReference::image_features(const PixelValues& px) const {
  const Gemma3VisionConfig& c = config_;
  if (px.channels != 3 || px.height != c.image_size || px.width != c.image_size)
    fail("image", "pixel values", "{} × {} × {}, the tower takes 3 × {} × {}", px.channels, px.height, px.width,
         c.image_size, c.image_size);
  const int64_t h = c.hidden, p = c.patch_size, g = c.grid(), n = g * g, s = c.image_size;
  // Patch embedding plus positions.
  std::vector<float> x(static_cast<size_t>(n * h));
  for (int64_t py = 0; py < g; ++py)
    for (int64_t pxi = 0; pxi < g; ++pxi)
      for (int64_t o = 0; o < h; ++o) {
        double acc = patch_bias_[static_cast<size_t>(o)];
        for (int64_t ch = 0; ch < 3; ++ch)
          for (int64_t i = 0; i < p; ++i)
            for (int64_t j = 0; j < p; ++j)
              acc += static_cast<double>(patch_weight_[static_cast<size_t>(((o * 3 + ch) * p + i) * p + j)]) *
                     px.values[static_cast<size_t>((ch * s + py * p + i) * s + pxi * p + j)];
        const int64_t t = py * g + pxi;
        x[static_cast<size_t>(t * h + o)] = static_cast<float>(acc) + positions_[static_cast<size_t>(t * h + o)];
      }
  // Encoder layers.
  const int64_t heads = c.heads, hd = h / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (const Layer& L : layers_) {
    const std::vector<float> a = layer_norm(x, n, h, L.norm1.weight, L.norm1.bias, c.layer_norm_eps);
    const std::vector<float> q = linear(a, n, L.q), k = linear(a, n, L.k), v = linear(a, n, L.v);
    std::vector<float> ctx(static_cast<size_t>(n * h));
    std::vector<double> score(static_cast<size_t>(n));
    for (int64_t head = 0; head < heads; ++head)
      for (int64_t i = 0; i < n; ++i) {
        double top = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < hd; ++e)
            dot += static_cast<double>(q[static_cast<size_t>(i * h + head * hd + e)]) * k[static_cast<size_t>(j * h + head * hd + e)];
          score[static_cast<size_t>(j)] = dot * scale;
          top = std::max(top, score[static_cast<size_t>(j)]);
        }
        double total = 0;
        for (double& e : score) total += (e = std::exp(e - top));
        for (int64_t e = 0; e < hd; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j) acc += score[static_cast<size_t>(j)] * v[static_cast<size_t>(j * h + head * hd + e)];
          ctx[static_cast<size_t>(i * h + head * hd + e)] = static_cast<float>(acc / total);
        }
      }
    const std::vector<float> attn = linear(ctx, n, L.o);
    for (size_t i = 0; i < x.size(); ++i) x[i] += attn[i];
    std::vector<float> m = linear(layer_norm(x, n, h, L.norm2.weight, L.norm2.bias, c.layer_norm_eps), n, L.fc1);
    for (float& e : m) e = gelu_tanh(e);
    const std::vector<float> out = linear(m, n, L.fc2);
    for (size_t i = 0; i < x.size(); ++i) x[i] += out[i];
  }
  x = layer_norm(x, n, h, post_norm_.weight, post_norm_.bias, c.layer_norm_eps);
  // Projector: average k × k squares of the grid, RMSNorm (1 + w), project.
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(c.tokens_per_image))));
  const int64_t kk = g / side;
  std::vector<float> pooled(static_cast<size_t>(c.tokens_per_image * h));
  for (int64_t ty = 0; ty < side; ++ty)
    for (int64_t tx = 0; tx < side; ++tx)
      for (int64_t o = 0; o < h; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < kk; ++i)
          for (int64_t j = 0; j < kk; ++j) acc += x[static_cast<size_t>(((ty * kk + i) * g + tx * kk + j) * h + o)];
        pooled[static_cast<size_t>((ty * side + tx) * h + o)] = static_cast<float>(acc / static_cast<double>(kk * kk));
      }
  std::vector<float> features(static_cast<size_t>(c.tokens_per_image * c.text_hidden));
  for (int64_t t = 0; t < c.tokens_per_image; ++t) {
    const float* r = pooled.data() + t * h;
    double sq = 0;
    for (int64_t i = 0; i < h; ++i) sq += static_cast<double>(r[i]) * r[i];
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(h) + c.layer_norm_eps);
    std::vector<double> normed(static_cast<size_t>(h));
    for (int64_t i = 0; i < h; ++i) normed[static_cast<size_t>(i)] = r[i] * inv * (1.0 + soft_norm_[static_cast<size_t>(i)]);
    for (int64_t o = 0; o < c.text_hidden; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < h; ++i) acc += normed[static_cast<size_t>(i)] * projection_[static_cast<size_t>(i * c.text_hidden + o)];
      features[static_cast<size_t>(t * c.text_hidden + o)] = static_cast<float>(acc);
    }
  }
  return features;
}

}  // namespace tessera

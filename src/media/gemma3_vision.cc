#include "media/gemma3_vision.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/ggml_dequant.h"
#include "core/json_file.h"
#include "sources/gguf.h"
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
  // 1 + w in f32, as transformers' Gemma3RMSNorm and llama.cpp's converter form it.
  for (float v : w.get(projector, "mm_soft_emb_norm.weight", h)) r.soft_scale_.push_back(1.0f + v);
  r.projection_ = w.get(projector, "mm_input_projection_weight", h * c.text_hidden);
  return r;
}

Gemma3VisionReference Gemma3VisionReference::load_mmproj(const GgufFile& gguf) {
  const std::string where = "mmproj";
  auto text = [&](const char* key) -> std::string {
    const GgufValue* v = gguf.find(key);
    if (!v || !v->as_string()) fail(where, key, "missing or not a string");
    return *v->as_string();
  };
  auto count = [&](const char* key) {
    const GgufValue* v = gguf.find(key);
    const std::optional<int64_t> n = v ? v->as_int() : std::nullopt;
    if (!n || *n <= 0) fail(where, key, "missing or not a positive integer");
    return *n;
  };
  if (text("general.architecture") != "clip")
    fail(where, "general.architecture", "'{}', an mmproj file's is 'clip'", text("general.architecture"));
  if (const std::string type = text("clip.projector_type"); type != "gemma3")
    fail(where, "clip.projector_type", "images through a '{}' projector are not supported yet (gemma3 is)", type);
  if (const GgufValue* v = gguf.find("clip.has_vision_encoder"); v && v->as_bool() && !*v->as_bool())
    fail(where, "clip.has_vision_encoder", "the file holds no vision encoder");
  Gemma3VisionReference r;
  Gemma3VisionConfig& c = r.config_;
  c.hidden = count("clip.vision.embedding_length");
  c.intermediate = count("clip.vision.feed_forward_length");
  c.layers = count("clip.vision.block_count");
  c.heads = count("clip.vision.attention.head_count");
  c.image_size = count("clip.vision.image_size");
  c.patch_size = count("clip.vision.patch_size");
  c.text_hidden = count("clip.vision.projection_dim");
  if (const GgufValue* v = gguf.find("clip.vision.attention.layer_norm_epsilon"); v && v->as_float())
    c.layer_norm_eps = static_cast<float>(*v->as_float());
  // The grid's squares pooled per side (llama.cpp's default for Gemma 3: 4,
  // 64 × 64 patches into 16 × 16 tokens).
  int64_t merge = 4;
  if (gguf.find("clip.vision.projector.scale_factor")) merge = count("clip.vision.projector.scale_factor");
  if (c.image_size % c.patch_size != 0 || c.grid() % merge != 0)
    fail(where, "clip.vision.projector.scale_factor", "{} does not pool a {} × {} patch grid evenly", merge, c.grid(),
         c.grid());
  c.tokens_per_image = (c.grid() / merge) * (c.grid() / merge);
  if (c.hidden % c.heads != 0) fail(where, "clip.vision.attention.head_count", "does not divide the hidden size");
  auto floats = [&](const char* key) {
    const GgufValue* v = gguf.find(key);
    std::optional<std::vector<double>> a = v ? v->as_float_array() : std::nullopt;
    if (!a || a->size() != 3) fail(where, key, "missing or not 3 numbers");
    return std::vector<float>(a->begin(), a->end());
  };
  r.image_mean = floats("clip.vision.image_mean");
  r.image_std = floats("clip.vision.image_std");

  auto get = [&](const std::string& name, int64_t elements) {
    const TensorView* t = gguf.find_tensor(name);
    if (!t) fail(where, name, "missing");
    std::vector<float> v = dequantize(*t);
    if (static_cast<int64_t>(v.size()) != elements)
      fail(where, name, "{} values, expected {}", v.size(), elements);
    return v;
  };
  const int64_t h = c.hidden, p = c.patch_size, g = c.grid();
  r.patch_weight_ = get("v.patch_embd.weight", h * 3 * p * p);
  r.patch_bias_ = get("v.patch_embd.bias", h);
  r.positions_ = get("v.position_embd.weight", g * g * h);
  auto norm = [&](const std::string& name) { return Norm{get(name + ".weight", h), get(name + ".bias", h)}; };
  auto lin = [&](const std::string& name, int64_t out, int64_t in) {
    return Linear{get(name + ".weight", out * in), get(name + ".bias", out), out, in};
  };
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string base = fmt::format("v.blk.{}.", l);
    r.layers_.push_back({norm(base + "ln1"), norm(base + "ln2"), lin(base + "attn_q", h, h), lin(base + "attn_k", h, h),
                         lin(base + "attn_v", h, h), lin(base + "attn_out", h, h),
                         lin(base + "ffn_up", c.intermediate, h), lin(base + "ffn_down", h, c.intermediate)});
  }
  r.post_norm_ = norm("v.post_ln");
  const std::vector<float> scale = get("mm.soft_emb_norm.weight", h);  // 1 + w, as the converter stores it
  r.soft_scale_.assign(scale.begin(), scale.end());
  r.projection_ = get("mm.input_projection.weight", h * c.text_hidden);
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
    for (int64_t i = 0; i < h; ++i) normed[static_cast<size_t>(i)] = r[i] * inv * soft_scale_[static_cast<size_t>(i)];
    for (int64_t o = 0; o < c.text_hidden; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < h; ++i) acc += normed[static_cast<size_t>(i)] * projection_[static_cast<size_t>(i * c.text_hidden + o)];
      features[static_cast<size_t>(t * c.text_hidden + o)] = static_cast<float>(acc);
    }
  }
  return features;
}

}  // namespace tessera

#include "media/qwen_image_processor.h"

#include <cmath>

#include "core/error.h"
#include "media/image_processor.h"

namespace tessera {

namespace {

constexpr const char* kFile = "preprocessor_config.json";

int64_t positive_or(const nlohmann::json& c, const char* key, int64_t fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number_integer() || c[key].get<int64_t>() <= 0) fail(kFile, key, "must be a positive integer");
  return c[key].get<int64_t>();
}

// Python 3's round(): to the nearest integer, ties to even.
int64_t python_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

QwenImageProcessorConfig QwenImageProcessorConfig::from_json(const nlohmann::json& config) {
  if (!config.is_object()) fail(kFile, "", "must be a JSON object");
  // The fixed-size processor's reading of the shared keys (resample, rescale, normalize).
  nlohmann::json shared = config;
  shared["size"] = {{"height", 1}, {"width", 1}};
  shared.erase("min_pixels");  // Qwen's pixel budget: read below
  shared.erase("max_pixels");
  const ImageProcessorConfig base = ImageProcessorConfig::from_json(shared);
  QwenImageProcessorConfig c;
  c.do_resize = base.do_resize;
  if (config.contains("resample") && !config["resample"].is_null()) c.resample = base.resample;
  c.do_rescale = base.do_rescale;
  c.rescale_factor = base.rescale_factor;
  c.do_normalize = base.do_normalize;
  if (config.contains("image_mean")) c.mean = base.mean;
  if (config.contains("image_std")) c.std = base.std;
  c.patch_size = positive_or(config, "patch_size", c.patch_size);
  c.temporal_patch_size = positive_or(config, "temporal_patch_size", c.temporal_patch_size);
  c.merge_size = positive_or(config, "merge_size", c.merge_size);
  if (config.contains("size") && config["size"].is_object()) {
    c.min_pixels = positive_or(config["size"], "shortest_edge", c.min_pixels);
    c.max_pixels = positive_or(config["size"], "longest_edge", c.max_pixels);
  }
  c.min_pixels = positive_or(config, "min_pixels", c.min_pixels);
  c.max_pixels = positive_or(config, "max_pixels", c.max_pixels);
  if (c.min_pixels > c.max_pixels) fail(kFile, "size", "shortest_edge {} is over longest_edge {}", c.min_pixels, c.max_pixels);
  return c;
}

std::pair<int64_t, int64_t> qwen_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                              int64_t max_pixels) {
  const auto h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  if (std::max(h, w) / std::min(h, w) > 200)
    fail("image", "aspect ratio", "{} × {}: the processor takes aspect ratios up to 200", width, height);
  int64_t h_bar = python_round(h / f) * factor, w_bar = python_round(w / f) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt((h * w) / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {h_bar, w_bar};
}

QwenPatches qwen_preprocess_image(const RgbImage& image, const QwenImageProcessorConfig& c) {
  const int64_t factor = c.patch_size * c.merge_size;
  RgbImage sized = image;
  if (c.do_resize) {
    const auto [h, w] = qwen_smart_resize(image.height, image.width, factor, c.min_pixels, c.max_pixels);
    sized = resize_image(image, w, h, c.resample);
  }
  if (sized.height % factor != 0 || sized.width % factor != 0)
    fail("image", "size", "{} × {} is not a multiple of {} (patch_size · merge_size) on each side", sized.width,
         sized.height, factor);
  // Rescale and normalize as the fixed-size processor does, then patch.
  ImageProcessorConfig norm;
  norm.do_resize = false;
  norm.do_rescale = c.do_rescale;
  norm.rescale_factor = c.rescale_factor;
  norm.do_normalize = c.do_normalize;
  norm.mean = c.mean;
  norm.std = c.std;
  const PixelValues px = preprocess_image(sized, norm);
  const int64_t p = c.patch_size, m = c.merge_size, tp = c.temporal_patch_size;
  QwenPatches out;
  out.grid_h = sized.height / p;
  out.grid_w = sized.width / p;
  out.patch_dim = 3 * tp * p * p;
  out.values.resize(static_cast<size_t>(out.grid_h * out.grid_w * out.patch_dim));
  float* dst = out.values.data();
  for (int64_t by = 0; by < out.grid_h / m; ++by)
    for (int64_t bx = 0; bx < out.grid_w / m; ++bx)
      for (int64_t my = 0; my < m; ++my)
        for (int64_t mx = 0; mx < m; ++mx) {
          const int64_t y0 = (by * m + my) * p, x0 = (bx * m + mx) * p;
          for (int64_t ch = 0; ch < 3; ++ch)
            for (int64_t t = 0; t < tp; ++t)
              for (int64_t i = 0; i < p; ++i)
                for (int64_t j = 0; j < p; ++j)
                  *dst++ = px.values[static_cast<size_t>((ch * px.height + y0 + i) * px.width + x0 + j)];
        }
  return out;
}

}  // namespace tessera

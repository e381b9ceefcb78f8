#include "media/qwen_image_processor.h"

#include <cmath>

#include "core/error.h"
#include "media/image_processor.h"

namespace tessera {

namespace {

// Python 3's round(): to the nearest integer, ties to even.
int64_t python_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

}  // namespace

ImageProcessorConfig QwenImageProcessorConfig::defaults() {
  ImageProcessorConfig p;
  p.resample = Resample::Bicubic;
  p.mean = {0.48145466f, 0.4578275f, 0.40821073f};
  p.std = {0.26862954f, 0.26130258f, 0.27577711f};
  return p;
}

QwenImageProcessorConfig QwenImageProcessorConfig::from_json(const nlohmann::json& config) {
  QwenImageProcessorConfig c;
  c.pixels = shared_processor_keys(config, defaults());
  c.patch_size = processor_positive(config, "patch_size", c.patch_size);
  c.temporal_patch_size = processor_positive(config, "temporal_patch_size", c.temporal_patch_size);
  c.merge_size = processor_positive(config, "merge_size", c.merge_size);
  if (config.contains("size") && config["size"].is_object()) {
    c.min_pixels = processor_positive(config["size"], "shortest_edge", c.min_pixels);
    c.max_pixels = processor_positive(config["size"], "longest_edge", c.max_pixels);
  }
  c.min_pixels = processor_positive(config, "min_pixels", c.min_pixels);
  c.max_pixels = processor_positive(config, "max_pixels", c.max_pixels);
  if (c.min_pixels > c.max_pixels) fail(kProcessorConfigFile, "size", "shortest_edge {} is over longest_edge {}", c.min_pixels, c.max_pixels);
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
  if (c.pixels.do_resize) {
    const auto [h, w] = qwen_smart_resize(image.height, image.width, factor, c.min_pixels, c.max_pixels);
    sized = resize_image(image, w, h, c.pixels.resample);
  }
  if (sized.height % factor != 0 || sized.width % factor != 0)
    fail("image", "size", "{} × {} is not a multiple of {} (patch_size · merge_size) on each side", sized.width,
         sized.height, factor);
  // Rescale and normalize as the fixed-size processor does, then patch.
  ImageProcessorConfig scaling = c.pixels;
  scaling.do_resize = false;
  const PixelValues px = preprocess_image(sized, scaling);
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

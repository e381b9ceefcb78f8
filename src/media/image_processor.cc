#include "media/image_processor.h"

#include <fmt/format.h>

#include "core/error.h"

namespace tessera {

namespace {

constexpr const char* kFile = "preprocessor_config.json";

std::array<float, 3> three(const nlohmann::json& config, const char* key, std::array<float, 3> fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  const nlohmann::json& v = config[key];
  if (v.is_number()) return {v.get<float>(), v.get<float>(), v.get<float>()};
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
    fail(kFile, key, "must be a number or a list of 3 numbers");
  return {v[0].get<float>(), v[1].get<float>(), v[2].get<float>()};
}

// A key a processor sets to something other than false / null / absent.
bool flag_or_value_set(const nlohmann::json& config, const char* key) {
  return config.contains(key) && !config[key].is_null() && !(config[key].is_boolean() && !config[key].get<bool>());
}

bool flag(const nlohmann::json& config, const char* key, bool fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_boolean()) fail(kFile, key, "must be true or false");
  return config[key].get<bool>();
}

}  // namespace

ImageProcessorConfig ImageProcessorConfig::from_json(const nlohmann::json& config) {
  if (!config.is_object()) fail(kFile, "", "must be a JSON object");
  for (const char* unsupported : {"do_pan_and_scan", "do_center_crop", "do_pad", "min_pixels", "max_pixels"})
    if (flag_or_value_set(config, unsupported))
      fail(kFile, unsupported, "is not supported yet (fixed-size processors only: Gemma 3, SigLIP)");
  ImageProcessorConfig c;
  c.do_resize = flag(config, "do_resize", c.do_resize);
  if (c.do_resize) {
    const nlohmann::json size = config.value("size", nlohmann::json::object());
    if (!size.is_object() || !size.contains("height") || !size.contains("width") || !size["height"].is_number_integer() ||
        !size["width"].is_number_integer())
      fail(kFile, "size", "must be {{\"height\": H, \"width\": W}} (shortest_edge is not supported yet)");
    c.height = size["height"].get<int64_t>();
    c.width = size["width"].get<int64_t>();
    if (c.height <= 0 || c.width <= 0 || c.height > 8192 || c.width > 8192)
      fail(kFile, "size", "{} × {} is not a size (1-8192 a side)", c.width, c.height);
    if (config.contains("resample") && !config["resample"].is_null()) {
      if (!config["resample"].is_number_integer()) fail(kFile, "resample", "must be a Pillow filter number");
      c.resample = resample_from_pil(config["resample"].get<int64_t>());
    }
  }
  c.do_rescale = flag(config, "do_rescale", c.do_rescale);
  if (config.contains("rescale_factor") && !config["rescale_factor"].is_null()) {
    if (!config["rescale_factor"].is_number()) fail(kFile, "rescale_factor", "must be a number");
    c.rescale_factor = config["rescale_factor"].get<double>();
  }
  c.do_normalize = flag(config, "do_normalize", c.do_normalize);
  c.mean = three(config, "image_mean", c.mean);
  c.std = three(config, "image_std", c.std);
  for (float s : c.std)
    if (c.do_normalize && s == 0.0f) fail(kFile, "image_std", "a standard deviation of 0");
  return c;
}

PixelValues preprocess_image(const RgbImage& image, const ImageProcessorConfig& c) {
  const RgbImage sized = c.do_resize ? resize_image(image, c.width, c.height, c.resample) : image;
  PixelValues out;
  out.height = sized.height;
  out.width = sized.width;
  out.values.resize(static_cast<size_t>(3 * sized.height * sized.width));
  const int64_t plane = sized.height * sized.width;
  for (int64_t i = 0; i < plane; ++i)
    for (int64_t ch = 0; ch < 3; ++ch) {
      const uint8_t u = sized.pixels[static_cast<size_t>(i * 3 + ch)];
      // numpy: float64 multiply, cast to float32, then float32 arithmetic.
      float x = c.do_rescale ? static_cast<float>(static_cast<double>(u) * c.rescale_factor) : static_cast<float>(u);
      if (c.do_normalize) x = (x - c.mean[static_cast<size_t>(ch)]) / c.std[static_cast<size_t>(ch)];
      out.values[static_cast<size_t>(ch * plane + i)] = x;
    }
  return out;
}

}  // namespace tessera

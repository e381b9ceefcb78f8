#include "media/image_processor.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace tessera {

namespace {

std::array<float, 3> three(const nlohmann::json& config, const char* key, std::array<float, 3> fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  const nlohmann::json& v = config[key];
  if (v.is_number()) return {v.get<float>(), v.get<float>(), v.get<float>()};
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
    fail(kProcessorConfigFile, key, "must be a number or a list of 3 numbers");
  return {v[0].get<float>(), v[1].get<float>(), v[2].get<float>()};
}

// A key a processor sets to something other than false / null / absent.
bool flag_or_value_set(const nlohmann::json& config, const char* key) {
  return config.contains(key) && !config[key].is_null() && !(config[key].is_boolean() && !config[key].get<bool>());
}

bool flag(const nlohmann::json& config, const char* key, bool fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_boolean()) fail(kProcessorConfigFile, key, "must be true or false");
  return config[key].get<bool>();
}

}  // namespace

ImageProcessorConfig ImageProcessorConfig::from_json(const nlohmann::json& config) {
  if (!config.is_object()) fail(kProcessorConfigFile, "", "must be a JSON object");
  for (const char* unsupported : {"do_center_crop", "do_pad", "min_pixels", "max_pixels"})
    if (flag_or_value_set(config, unsupported))
      fail(kProcessorConfigFile, unsupported, "is not supported yet (fixed-size processors only: Gemma 3, SigLIP)");
  ImageProcessorConfig c;
  c.do_resize = flag(config, "do_resize", c.do_resize);
  if (c.do_resize) {
    const nlohmann::json size = config.value("size", nlohmann::json::object());
    if (!size.is_object() || !size.contains("height") || !size.contains("width") || !size["height"].is_number_integer() ||
        !size["width"].is_number_integer())
      fail(kProcessorConfigFile, "size", "must be {{\"height\": H, \"width\": W}} (shortest_edge is not supported yet)");
    c.height = size["height"].get<int64_t>();
    c.width = size["width"].get<int64_t>();
    if (c.height <= 0 || c.width <= 0 || c.height > 8192 || c.width > 8192)
      fail(kProcessorConfigFile, "size", "{} × {} is not a size (1-8192 a side)", c.width, c.height);
    if (config.contains("resample") && !config["resample"].is_null()) {
      if (!config["resample"].is_number_integer()) fail(kProcessorConfigFile, "resample", "must be a Pillow filter number");
      c.resample = resample_from_pil(config["resample"].get<int64_t>());
    }
  }
  c.do_rescale = flag(config, "do_rescale", c.do_rescale);
  if (config.contains("rescale_factor") && !config["rescale_factor"].is_null()) {
    if (!config["rescale_factor"].is_number()) fail(kProcessorConfigFile, "rescale_factor", "must be a number");
    c.rescale_factor = config["rescale_factor"].get<double>();
  }
  c.do_normalize = flag(config, "do_normalize", c.do_normalize);
  c.mean = three(config, "image_mean", c.mean);
  c.std = three(config, "image_std", c.std);
  c.do_pan_and_scan = flag(config, "do_pan_and_scan", c.do_pan_and_scan);
  c.pan_and_scan_min_crop_size = processor_positive(config, "pan_and_scan_min_crop_size", c.pan_and_scan_min_crop_size);
  c.pan_and_scan_max_num_crops = processor_positive(config, "pan_and_scan_max_num_crops", c.pan_and_scan_max_num_crops);
  if (config.contains("pan_and_scan_min_ratio_to_activate") && !config["pan_and_scan_min_ratio_to_activate"].is_null()) {
    if (!config["pan_and_scan_min_ratio_to_activate"].is_number())
      fail(kProcessorConfigFile, "pan_and_scan_min_ratio_to_activate", "must be a number");
    c.pan_and_scan_min_ratio_to_activate = config["pan_and_scan_min_ratio_to_activate"].get<double>();
  }
  for (float s : c.std)
    if (c.do_normalize && s == 0.0f) fail(kProcessorConfigFile, "image_std", "a standard deviation of 0");
  return c;
}

ImageProcessorConfig shared_processor_keys(const nlohmann::json& config, const ImageProcessorConfig& defaults) {
  if (!config.is_object()) fail(kProcessorConfigFile, "", "must be a JSON object");
  nlohmann::json shared = config;
  shared["size"] = {{"height", defaults.height}, {"width", defaults.width}};
  for (const char* own : {"min_pixels", "max_pixels", "do_pan_and_scan"}) shared.erase(own);
  const ImageProcessorConfig read = ImageProcessorConfig::from_json(shared);
  ImageProcessorConfig c = defaults;
  auto given = [&](const char* key) { return config.contains(key) && !config[key].is_null(); };
  if (given("do_resize")) c.do_resize = read.do_resize;
  if (given("resample")) c.resample = read.resample;
  if (given("do_rescale")) c.do_rescale = read.do_rescale;
  if (given("rescale_factor")) c.rescale_factor = read.rescale_factor;
  if (given("do_normalize")) c.do_normalize = read.do_normalize;
  if (given("image_mean")) c.mean = read.mean;
  if (given("image_std")) c.std = read.std;
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

std::vector<RgbImage> pan_and_scan_crops(const RgbImage& image, const ImageProcessorConfig& c) {
  const auto h = static_cast<double>(image.height), w = static_cast<double>(image.width);
  const auto min_crop = static_cast<double>(c.pan_and_scan_min_crop_size);
  int64_t across = 1, down = 1;
  // Python: int(math.floor(long / short + 0.5)), capped by long / min_crop_size, at least 2, at most max_num_crops.
  auto count = [&](double longer, double shorter) {
    int64_t n = static_cast<int64_t>(std::floor(longer / shorter + 0.5));
    n = std::min(static_cast<int64_t>(std::floor(longer / min_crop)), n);
    return std::min(c.pan_and_scan_max_num_crops, std::max<int64_t>(2, n));
  };
  if (image.width >= image.height) {
    if (w / h < c.pan_and_scan_min_ratio_to_activate) return {};
    across = count(w, h);
  } else {
    if (h / w < c.pan_and_scan_min_ratio_to_activate) return {};
    down = count(h, w);
  }
  const auto crop_w = static_cast<int64_t>(std::ceil(w / static_cast<double>(across)));
  const auto crop_h = static_cast<int64_t>(std::ceil(h / static_cast<double>(down)));
  if (std::min(crop_w, crop_h) < c.pan_and_scan_min_crop_size) return {};
  std::vector<RgbImage> crops;
  for (int64_t cy = 0; cy < down; ++cy)
    for (int64_t cx = 0; cx < across; ++cx) {
      // numpy slicing: a crop past the picture's edge is what is left of it.
      const int64_t y0 = cy * crop_h, x0 = cx * crop_w;
      const int64_t ch = std::min(crop_h, image.height - y0), cw = std::min(crop_w, image.width - x0);
      if (ch <= 0 || cw <= 0) fail("image", "pan and scan", "an empty crop at ({}, {})", x0, y0);
      RgbImage crop;
      crop.width = cw;
      crop.height = ch;
      crop.pixels.resize(static_cast<size_t>(cw * ch * 3));
      for (int64_t y = 0; y < ch; ++y)
        std::copy_n(image.row(y0 + y) + x0 * 3, cw * 3, crop.row(y));
      crops.push_back(std::move(crop));
    }
  return crops;
}

std::vector<PixelValues> preprocess_image_and_crops(const RgbImage& image, const ImageProcessorConfig& c) {
  std::vector<PixelValues> out{preprocess_image(image, c)};
  if (c.do_pan_and_scan)
    for (const RgbImage& crop : pan_and_scan_crops(image, c)) out.push_back(preprocess_image(crop, c));
  return out;
}

}  // namespace tessera

#include "media/gemma4_image_processor.h"

#include <algorithm>
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

}  // namespace

Gemma4ImageProcessorConfig Gemma4ImageProcessorConfig::from_json(const nlohmann::json& config) {
  if (!config.is_object()) fail(kFile, "", "must be a JSON object");
  nlohmann::json shared = config;  // the shared keys, read as the fixed-size processor reads them
  shared["size"] = {{"height", 1}, {"width", 1}};
  const ImageProcessorConfig base = ImageProcessorConfig::from_json(shared);
  Gemma4ImageProcessorConfig c;
  c.do_resize = base.do_resize;
  if (config.contains("resample") && !config["resample"].is_null()) c.resample = base.resample;
  c.do_rescale = base.do_rescale;
  c.rescale_factor = base.rescale_factor;
  c.do_normalize = config.contains("do_normalize") ? base.do_normalize : c.do_normalize;
  if (config.contains("image_mean")) c.mean = base.mean;
  if (config.contains("image_std")) c.std = base.std;
  c.patch_size = positive_or(config, "patch_size", c.patch_size);
  c.max_soft_tokens = positive_or(config, "max_soft_tokens", c.max_soft_tokens);
  c.pooling_kernel_size = positive_or(config, "pooling_kernel_size", c.pooling_kernel_size);
  const int64_t supported[] = {70, 140, 280, 560, 1120};
  if (std::find(std::begin(supported), std::end(supported), c.max_soft_tokens) == std::end(supported))
    fail(kFile, "max_soft_tokens", "{} is not one of 70, 140, 280, 560, 1120", c.max_soft_tokens);
  return c;
}

std::pair<int64_t, int64_t> gemma4_resized_size(int64_t height, int64_t width, const Gemma4ImageProcessorConfig& c) {
  const auto h = static_cast<double>(height), w = static_cast<double>(width);
  const int64_t target_px = c.max_patches() * c.patch_size * c.patch_size;
  const double factor = std::sqrt(static_cast<double>(target_px) / (h * w));
  const int64_t side = c.pooling_kernel_size * c.patch_size;
  int64_t th = static_cast<int64_t>(std::floor(factor * h / static_cast<double>(side))) * side;
  int64_t tw = static_cast<int64_t>(std::floor(factor * w / static_cast<double>(side))) * side;
  if (th == 0 && tw == 0) fail("image", "size", "{} × {} resizes to nothing", width, height);
  const int64_t longest = (c.max_patches() / (c.pooling_kernel_size * c.pooling_kernel_size)) * side;
  if (th == 0) {
    th = side;
    tw = std::min(static_cast<int64_t>(std::floor(w / h)) * side, longest);
  } else if (tw == 0) {
    tw = side;
    th = std::min(static_cast<int64_t>(std::floor(h / w)) * side, longest);
  }
  if (th * tw > target_px) fail("image", "size", "{} × {} would take more than {} patches", width, height, c.max_patches());
  return {th, tw};
}

Gemma4Patches gemma4_preprocess_image(const RgbImage& image, const Gemma4ImageProcessorConfig& c) {
  RgbImage sized = image;
  if (c.do_resize) {
    const auto [h, w] = gemma4_resized_size(image.height, image.width, c);
    sized = resize_image(image, w, h, c.resample);
  }
  const int64_t p = c.patch_size;
  if (sized.height % p != 0 || sized.width % p != 0)
    fail("image", "size", "{} × {} is not a multiple of the patch size {}", sized.width, sized.height, p);
  ImageProcessorConfig norm;
  norm.do_resize = false;
  norm.do_rescale = c.do_rescale;
  norm.rescale_factor = c.rescale_factor;
  norm.do_normalize = c.do_normalize;
  norm.mean = c.mean;
  norm.std = c.std;
  const PixelValues px = preprocess_image(sized, norm);
  const int64_t gh = sized.height / p, gw = sized.width / p, n = gh * gw;
  if (n > c.max_patches()) fail("image", "size", "{} patches, over the budget of {}", n, c.max_patches());
  Gemma4Patches out;
  out.patch_dim = p * p * 3;
  out.num_soft_tokens = n / (c.pooling_kernel_size * c.pooling_kernel_size);
  out.values.assign(static_cast<size_t>(c.max_patches() * out.patch_dim), 0.0f);
  out.positions.assign(static_cast<size_t>(c.max_patches() * 2), -1);
  for (int64_t py = 0; py < gh; ++py)
    for (int64_t pxi = 0; pxi < gw; ++pxi) {
      const int64_t t = py * gw + pxi;
      float* dst = out.values.data() + t * out.patch_dim;
      for (int64_t i = 0; i < p; ++i)
        for (int64_t j = 0; j < p; ++j)
          for (int64_t ch = 0; ch < 3; ++ch)
            *dst++ = px.values[static_cast<size_t>((ch * px.height + py * p + i) * px.width + pxi * p + j)];
      out.positions[static_cast<size_t>(t * 2)] = pxi;
      out.positions[static_cast<size_t>(t * 2 + 1)] = py;
    }
  return out;
}

}  // namespace tessera

#include "media/gemma4_image_processor.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "media/image_processor.h"

namespace tessera {

ImageProcessorConfig Gemma4ImageProcessorConfig::defaults() {
  ImageProcessorConfig p;
  p.resample = Resample::Bicubic;
  p.do_normalize = false;
  p.mean = {0.0f, 0.0f, 0.0f};
  p.std = {1.0f, 1.0f, 1.0f};
  return p;
}

Gemma4ImageProcessorConfig Gemma4ImageProcessorConfig::from_json(const nlohmann::json& config) {
  Gemma4ImageProcessorConfig c;
  c.pixels = shared_processor_keys(config, defaults());
  c.patch_size = processor_positive(config, "patch_size", c.patch_size);
  c.max_soft_tokens = processor_positive(config, "max_soft_tokens", c.max_soft_tokens);
  c.pooling_kernel_size = processor_positive(config, "pooling_kernel_size", c.pooling_kernel_size);
  const int64_t supported[] = {70, 140, 280, 560, 1120};
  if (std::find(std::begin(supported), std::end(supported), c.max_soft_tokens) == std::end(supported))
    fail(kProcessorConfigFile, "max_soft_tokens", "{} is not one of 70, 140, 280, 560, 1120", c.max_soft_tokens);
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
  if (c.pixels.do_resize) {
    const auto [h, w] = gemma4_resized_size(image.height, image.width, c);
    sized = resize_image(image, w, h, c.pixels.resample);
  }
  const int64_t p = c.patch_size;
  if (sized.height % p != 0 || sized.width % p != 0)
    fail("image", "size", "{} × {} is not a multiple of the patch size {}", sized.width, sized.height, p);
  ImageProcessorConfig scaling = c.pixels;
  scaling.do_resize = false;
  const PixelValues px = preprocess_image(sized, scaling);
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

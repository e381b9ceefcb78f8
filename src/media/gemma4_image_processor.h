// Gemma 4's image preprocessing, as transformers' Gemma4ImageProcessor (PIL
// backend) does it:
//   aspect-preserving resize to the largest size whose patches fit the
//     budget max_soft_tokens · k² (k = pooling_kernel_size) with each side
//     a multiple of k · patch_size (a side that rounds to 0 takes one
//     multiple, the other its aspect ratio's floor, capped); Pillow,
//     bicubic by default; no resize when the size already fits exactly;
//   rescale (and normalize only where the config asks: by default it does not);
//   patches in raster order, each flattened row, column, channel; positions
//     (x, y) per patch; both padded to the budget (zero patches, position −1).
// max_soft_tokens must be 70, 140, 280, 560 or 1120.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "media/image.h"
#include "media/image_processor.h"

namespace tessera {

struct Gemma4ImageProcessorConfig {
  int64_t patch_size = 16, max_soft_tokens = 280, pooling_kernel_size = 3;
  // resample, rescale and normalize (its size unused): bicubic, no normalization.
  ImageProcessorConfig pixels = defaults();
  static ImageProcessorConfig defaults();

  int64_t max_patches() const { return max_soft_tokens * pooling_kernel_size * pooling_kernel_size; }
  // From preprocessor_config.json; Error("preprocessor_config.json", key, problem).
  static Gemma4ImageProcessorConfig from_json(const nlohmann::json& config);
};

// (height, width) of the resize; Error("image", "size", ...) when no size fits.
std::pair<int64_t, int64_t> gemma4_resized_size(int64_t height, int64_t width, const Gemma4ImageProcessorConfig& c);

struct Gemma4Patches {
  int64_t patch_dim = 0, num_soft_tokens = 0;
  std::vector<float> values;       // [max_patches][patch_dim], zero past the image's patches
  std::vector<int64_t> positions;  // [max_patches][2]: (x, y), −1 past the image's patches
};

Gemma4Patches gemma4_preprocess_image(const RgbImage& image, const Gemma4ImageProcessorConfig& config);

}  // namespace tessera

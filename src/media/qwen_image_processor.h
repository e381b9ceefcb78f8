// Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 image preprocessing, as
// transformers' Qwen2VLImageProcessor (PIL backend) does it:
//   smart resize: each side to a multiple of factor = patch_size ·
//     merge_size (Python's round, ties to even), the area then brought
//     within [min_pixels, max_pixels] (size.shortest_edge / longest_edge)
//     keeping the aspect ratio; an aspect ratio over 200 is refused;
//   resize (Pillow, `resample`, bicubic by default), rescale and normalize as
//     media/image_processor.h;
//   patches: the grid of patch_size squares, ordered merge_size × merge_size
//     block by block (block row, block column, row in block, column in
//     block), each patch flattened channel, then time (the picture repeated
//     temporal_patch_size times), then row, then column.
// The result is [grid_h · grid_w, 3 · temporal_patch_size · patch_size²]
// with image_grid_thw = (1, grid_h, grid_w).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "media/image.h"
#include "media/image_processor.h"

namespace tessera {

struct QwenImageProcessorConfig {
  int64_t patch_size = 14, temporal_patch_size = 2, merge_size = 2;
  int64_t min_pixels = 56 * 56, max_pixels = 28 * 28 * 1280;
  // resample, rescale and normalize (its size unused): bicubic, CLIP's mean and std.
  ImageProcessorConfig pixels = defaults();
  static ImageProcessorConfig defaults();

  // From preprocessor_config.json; Error("preprocessor_config.json", key, problem).
  static QwenImageProcessorConfig from_json(const nlohmann::json& config);
};

// (height, width) after smart resize; Error("image", "aspect ratio", ...) past 200.
std::pair<int64_t, int64_t> qwen_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                              int64_t max_pixels);

struct QwenPatches {
  int64_t grid_t = 1, grid_h = 0, grid_w = 0, patch_dim = 0;
  std::vector<float> values;  // [grid_h · grid_w][patch_dim]
};

QwenPatches qwen_preprocess_image(const RgbImage& image, const QwenImageProcessorConfig& config);

}  // namespace tessera

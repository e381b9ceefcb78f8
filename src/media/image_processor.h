// A vision model's image preprocessing, as its Hugging Face image processor
// (PIL backend) does it, from the processor's preprocessor_config.json:
//   resize to size {height, width} with `resample` (media/image_resize.h),
//   rescale: x = float32(double(u8) · rescale_factor),
//   normalize: (x − mean[c]) / std[c] in float32,
// giving pixel values channel-first, [3, height, width]. Gemma 3's and
// SigLIP's processors (fixed size, no pan-and-scan) are this; the keys
// another processor needs (shortest_edge, Qwen's min / max pixels,
// do_pan_and_scan) are refused by name rather than ignored.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "media/image.h"
#include "media/image_resize.h"

namespace tessera {

struct ImageProcessorConfig {
  bool do_resize = true;
  int64_t height = 224, width = 224;
  Resample resample = Resample::Bilinear;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f}, std{0.5f, 0.5f, 0.5f};

  // Throws Error("preprocessor_config.json", key, problem).
  static ImageProcessorConfig from_json(const nlohmann::json& config);
};

struct PixelValues {
  int64_t channels = 3, height = 0, width = 0;
  std::vector<float> values;  // [channels][height][width]
};

PixelValues preprocess_image(const RgbImage& image, const ImageProcessorConfig& config);

}  // namespace tessera

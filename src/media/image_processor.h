// A vision model's image preprocessing, as its Hugging Face image processor
// (PIL backend) does it, from the processor's preprocessor_config.json:
//   resize to size {height, width} with `resample` (media/image_resize.h),
//   rescale: x = float32(double(u8) · rescale_factor),
//   normalize: (x − mean[c]) / std[c] in float32,
// giving pixel values channel-first, [3, height, width]. Gemma 3's and
// SigLIP's processors are this. Gemma 3's pan and scan (do_pan_and_scan)
// adds crops of the original picture, each processed the same way: a
// picture whose long side is at least min_ratio_to_activate times its short
// side is cut along the long side into n = clamp(round-half-up(long /
// short), 2, max_num_crops) crops (at most long / min_crop_size), each
// ⌈side / n⌉ long (the last one what is left), none if a crop would be
// shorter than min_crop_size. The keys another processor needs
// (shortest_edge, Qwen's min / max pixels) are refused by name rather than
// ignored.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "media/image.h"
#include "media/image_resize.h"
#include "media/processor_config.h"

namespace tessera {

struct ImageProcessorConfig {
  bool do_resize = true;
  int64_t height = 224, width = 224;
  Resample resample = Resample::Bilinear;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f}, std{0.5f, 0.5f, 0.5f};
  bool do_pan_and_scan = false;
  int64_t pan_and_scan_min_crop_size = 256, pan_and_scan_max_num_crops = 4;
  double pan_and_scan_min_ratio_to_activate = 1.2;

  // Throws Error("preprocessor_config.json", key, problem).
  static ImageProcessorConfig from_json(const nlohmann::json& config);
};

// The keys every processor here shares (do_resize, resample, do_rescale,
// rescale_factor, do_normalize, image_mean, image_std), read from `config`,
// `defaults` where a key is absent: for the patching processors (Qwen,
// Gemma 4), whose size keys are their own.
ImageProcessorConfig shared_processor_keys(const nlohmann::json& config, const ImageProcessorConfig& defaults);

struct PixelValues {
  int64_t channels = 3, height = 0, width = 0;
  std::vector<float> values;  // [channels][height][width]
};

PixelValues preprocess_image(const RgbImage& image, const ImageProcessorConfig& config);

// The picture, then its pan-and-scan crops (none unless do_pan_and_scan),
// each through preprocess_image.
std::vector<PixelValues> preprocess_image_and_crops(const RgbImage& image, const ImageProcessorConfig& config);

// Gemma 3's pan-and-scan crops of `image` (empty when it does not apply).
std::vector<RgbImage> pan_and_scan_crops(const RgbImage& image, const ImageProcessorConfig& config);

}  // namespace tessera

// libFuzzer target: image bytes -> RgbImage, then a resize to 7 × 5 and
// Gemma 3's preprocessing at 14 × 14. Any input must end in an image or a
// tessera::Error; small caps keep a claimed huge picture from being decoded.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "media/image.h"
#include "media/image_processor.h"
#include "media/image_resize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::ImageLimits limits;
  limits.max_pixels = 1 << 20;
  limits.max_side = 4096;
  try {
    const tessera::RgbImage image = tessera::decode_image(std::span(data, size), limits);
    (void)tessera::resize_image(image, 7, 5, tessera::Resample::Bicubic);
    tessera::ImageProcessorConfig config;
    config.height = config.width = 14;
    (void)tessera::preprocess_image(image, config);
  } catch (const tessera::Error&) {
  }
  return 0;
}

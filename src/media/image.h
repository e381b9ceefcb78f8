// Images in: an 8-bit RGB picture decoded from JPEG or PNG bytes, with caps
// checked from the file's header before any pixel buffer is allocated.
//
// The decoders are the maintained libraries Pillow itself uses
// (libjpeg-turbo, libpng), so the pixels are the ones Hugging Face image
// processors see after `Image.open(...).convert("RGB")`:
//   JPEG  libjpeg's defaults (integer slow DCT, fancy upsampling), YCbCr or
//         grayscale output as RGB; CMYK / YCCK is refused, and so is a file
//         that ends before its end-of-image marker (Pillow's "truncated").
//   PNG   palette expanded, gray replicated to RGB, alpha dropped (as
//         convert("RGB") drops it: no compositing), 1/2/4-bit samples
//         scaled to 8 bits, 16-bit samples keep their high byte.
// EXIF orientation is not applied (transformers' load_image applies it; a
// processor handed an already-open image does not).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // rows top to bottom, each pixel R, G, B

  const uint8_t* row(int64_t y) const { return pixels.data() + y * width * 3; }
  uint8_t* row(int64_t y) { return pixels.data() + y * width * 3; }
};

// What a decoder may be asked to do. A header claiming more pixels than
// max_pixels (or a zero side) is refused before decoding.
struct ImageLimits {
  int64_t max_pixels = int64_t{8192} * 8192;
  int64_t max_side = 16384;
};

// Decodes JPEG or PNG `bytes` (chosen by their signature). Throws
// Error("image", what, problem) for anything else, a truncated or corrupt
// file, or a picture over `limits`.
RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

}  // namespace tessera

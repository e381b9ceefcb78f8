// Resizing as Pillow's Image.resize does it on 8-bit images, bit for bit:
// the picture Hugging Face image processors (their PIL backend) feed a
// vision tower.
//
// Each axis is resampled separately (horizontal pass, then vertical) with a
// filter whose support widens by the downscale factor (antialiasing). For
// output sample i of an axis scaled by s = in / out, centred at (i + ½)·s,
// the taps cover source samples [⌊c − r + ½⌋, ⌊c + r + ½⌋) with r the
// filter's support times max(s, 1); each tap's weight is the filter at
// (j − c + ½) / max(s, 1), normalised to sum 1, then rounded to a 22-bit
// fixed-point integer. A sample is ½ (in fixed point) plus the sum of taps
// times 8-bit inputs, shifted right 22 bits and clamped to 0..255. The
// vertical pass reads the horizontal pass's 8-bit output. NEAREST takes
// source sample ⌊(i + ½)·s⌋.
#pragma once

#include <cstdint>

#include "media/image.h"

namespace tessera {

// Pillow's filters, with its numbering (PIL.Image.Resampling, which is
// what preprocessor_config.json's "resample" holds).
enum class Resample : int { Nearest = 0, Lanczos = 1, Bilinear = 2, Bicubic = 3, Box = 4, Hamming = 5 };

// Resample from its Pillow number; Error("image", "resample", ...) for others.
Resample resample_from_pil(int64_t value);

RgbImage resize_image(const RgbImage& image, int64_t width, int64_t height, Resample filter);

}  // namespace tessera

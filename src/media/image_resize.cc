// Pillow-exact 8-bit resampling (media/image_resize.h). The coefficient
// arithmetic is in double, in the order Pillow's Resample.c evaluates it,
// so each fixed-point weight comes out the same integer; this file must
// not contract a·b + c into FMAs (see CMakeLists.txt: -ffp-contract=off).
#include "media/image_resize.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tessera {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // 8-bit samples, 2 bits of headroom for negative lobes

struct Filter {
  double (*weight)(double);
  double support;
};

double box(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

double bilinear(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));  // the f32 constants are Pillow's
}

double bicubic(double x) {  // Keys' cubic, a = −0.5
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0; }

Filter filter_of(Resample r) {
  switch (r) {
    case Resample::Box: return {box, 0.5};
    case Resample::Bilinear: return {bilinear, 1.0};
    case Resample::Hamming: return {hamming, 1.0};
    case Resample::Bicubic: return {bicubic, 2.0};
    case Resample::Lanczos: return {lanczos, 3.0};
    case Resample::Nearest: break;
  }
  fail("image", "resample", "nearest has no filter");
}

// One axis's taps: for output sample i, `first[i]` and `count[i]` source
// samples with fixed-point weights weights[i · taps + j].
struct Taps {
  int64_t taps = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> weights;
};

Taps taps_for(int64_t in_size, int64_t out_size, const Filter& f) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = f.support * filter_scale;
  Taps t;
  t.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out_size));
  t.count.resize(static_cast<size_t>(out_size));
  t.weights.assign(static_cast<size_t>(out_size * t.taps), 0);
  std::vector<double> k(static_cast<size_t>(t.taps));
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    const double ss = 1.0 / filter_scale;
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size);
    const int64_t n = hi - lo;
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double w = f.weight((static_cast<double>(j + lo) - center + 0.5) * ss);
      k[static_cast<size_t>(j)] = w;
      sum += w;
    }
    for (int64_t j = 0; j < n; ++j) {
      double w = k[static_cast<size_t>(j)];
      if (sum != 0.0) w /= sum;
      t.weights[static_cast<size_t>(i * t.taps + j)] =
          static_cast<int32_t>(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    t.first[static_cast<size_t>(i)] = lo;
    t.count[static_cast<size_t>(i)] = n;
  }
  return t;
}

uint8_t clip8(int32_t v) { return static_cast<uint8_t>(std::clamp(v >> kPrecisionBits, 0, 255)); }

// Resamples rows [row0, row0 + out.height) of `in` along x.
void horizontal(const RgbImage& in, int64_t row0, const Taps& t, RgbImage& out) {
  for (int64_t y = 0; y < out.height; ++y) {
    const uint8_t* src = in.row(y + row0);
    uint8_t* dst = out.row(y);
    for (int64_t x = 0; x < out.width; ++x) {
      const int32_t* w = t.weights.data() + x * t.taps;
      const uint8_t* s = src + t.first[static_cast<size_t>(x)] * 3;
      int32_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      for (int64_t j = 0; j < t.count[static_cast<size_t>(x)]; ++j)
        for (int c = 0; c < 3; ++c) acc[c] += s[j * 3 + c] * w[j];
      for (int c = 0; c < 3; ++c) dst[x * 3 + c] = clip8(acc[c]);
    }
  }
}

// Resamples `in` along y; tap rows are offset by -row0 (the rows `in` starts at).
void vertical(const RgbImage& in, int64_t row0, const Taps& t, RgbImage& out) {
  for (int64_t y = 0; y < out.height; ++y) {
    const int32_t* w = t.weights.data() + y * t.taps;
    const int64_t first = t.first[static_cast<size_t>(y)] - row0, n = t.count[static_cast<size_t>(y)];
    uint8_t* dst = out.row(y);
    for (int64_t x = 0; x < out.width * 3; ++x) {
      int32_t acc = 1 << (kPrecisionBits - 1);
      for (int64_t j = 0; j < n; ++j) acc += in.row(first + j)[x] * w[j];
      dst[x] = clip8(acc);
    }
  }
}

RgbImage blank(int64_t width, int64_t height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(static_cast<size_t>(width * height * 3));
  return image;
}

// Source index per output index: Pillow steps a running coordinate from
// s / 2 by s (a sum, not (i + ½)·s: the two round differently).
std::vector<int64_t> nearest_sources(int64_t in_size, int64_t out_size) {
  const double s = static_cast<double>(in_size) / static_cast<double>(out_size);
  std::vector<int64_t> at(static_cast<size_t>(out_size));
  double v = s * 0.5;
  for (int64_t i = 0; i < out_size; ++i, v += s) at[static_cast<size_t>(i)] = std::min(static_cast<int64_t>(v), in_size - 1);
  return at;
}

RgbImage nearest(const RgbImage& in, int64_t width, int64_t height) {
  RgbImage out = blank(width, height);
  const std::vector<int64_t> xs = nearest_sources(in.width, width), ys = nearest_sources(in.height, height);
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      std::copy_n(in.row(ys[static_cast<size_t>(y)]) + xs[static_cast<size_t>(x)] * 3, 3, out.row(y) + x * 3);
  return out;
}

}  // namespace

Resample resample_from_pil(int64_t value) {
  if (value < 0 || value > 5) fail("image", "resample", "{} is not a Pillow filter (0-5)", value);
  return static_cast<Resample>(value);
}

RgbImage resize_image(const RgbImage& image, int64_t width, int64_t height, Resample filter) {
  if (width <= 0 || height <= 0) fail("image", "resize", "to {} × {}: empty", width, height);
  if (image.width == width && image.height == height) return image;
  if (filter == Resample::Nearest) return nearest(image, width, height);
  const Filter f = filter_of(filter);
  const Taps across = taps_for(image.width, width, f), down = taps_for(image.height, height, f);
  const bool need_x = width != image.width, need_y = height != image.height;
  if (!need_y) {
    RgbImage out = blank(width, height);
    horizontal(image, 0, across, out);
    return out;
  }
  if (!need_x) {
    RgbImage out = blank(width, height);
    vertical(image, 0, down, out);
    return out;
  }
  // Pillow (11 and later) runs the vertical pass first when the height
  // shrinks by more than twice as many pixels as the width does.
  const int64_t rows_lost = image.height - height, columns_lost = image.width - width;
  if (rows_lost > 0 && rows_lost > columns_lost * 2) {
    RgbImage shorter = blank(image.width, height);
    vertical(image, 0, down, shorter);
    RgbImage out = blank(width, height);
    horizontal(shorter, 0, across, out);
    return out;
  }
  // Horizontal first: only the source rows the vertical taps read.
  const int64_t row0 = down.first.front();
  const int64_t row_end = down.first.back() + down.count.back();
  RgbImage across_only = blank(width, row_end - row0);
  horizontal(image, row0, across, across_only);
  RgbImage out = blank(width, height);
  vertical(across_only, row0, down, out);
  return out;
}

}  // namespace tessera

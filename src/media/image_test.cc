// Images: hand-made PNGs decode to their pixels; every truncation of a valid
// file is an Error, never a crash; caps are checked from the header; resizing
// keeps a flat picture flat under every filter and picks Pillow's samples
// for NEAREST. (Bit-exactness against Pillow itself: tests/python/test_media.py.)
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "media/image.h"
#include "media/image_processor.h"
#include "media/image_resize.h"

namespace tessera {
namespace {

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void chunk(std::vector<uint8_t>& png, const char* kind, const std::vector<uint8_t>& body) {
  put32(png, static_cast<uint32_t>(body.size()));
  const size_t start = png.size();
  png.insert(png.end(), kind, kind + 4);
  png.insert(png.end(), body.begin(), body.end());
  put32(png, crc32(png.data() + start, png.size() - start));
}

// An 8-bit RGB PNG of `pixels` (rows of width·3 bytes), deflate's stored blocks.
std::vector<uint8_t> rgb_png(uint32_t width, uint32_t height, const std::vector<uint8_t>& pixels) {
  std::vector<uint8_t> raw;
  for (uint32_t y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), pixels.begin() + y * width * 3, pixels.begin() + (y + 1) * width * 3);
  }
  std::vector<uint8_t> z = {0x78, 0x01, 0x01, static_cast<uint8_t>(raw.size()), static_cast<uint8_t>(raw.size() >> 8),
                            static_cast<uint8_t>(~raw.size()), static_cast<uint8_t>(~raw.size() >> 8)};
  z.insert(z.end(), raw.begin(), raw.end());
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  put32(z, (b << 16) | a);
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  put32(ihdr, width);
  put32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", {});
  return png;
}

std::vector<uint8_t> some_pixels(uint32_t width, uint32_t height) {
  std::vector<uint8_t> p(width * height * 3);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  return p;
}

TEST(Image, PngDecodesToItsPixels) {
  const std::vector<uint8_t> pixels = some_pixels(5, 3);
  const RgbImage image = decode_image(rgb_png(5, 3, pixels));
  EXPECT_EQ(image.width, 5);
  EXPECT_EQ(image.height, 3);
  EXPECT_EQ(image.pixels, pixels);
}

TEST(Image, EveryTruncationIsAnError) {
  const std::vector<uint8_t> png = rgb_png(4, 4, some_pixels(4, 4));
  for (size_t n = 0; n + 12 < png.size(); ++n)  // IEND (12 bytes) is not needed for the pixels
    EXPECT_THROW(decode_image(std::span(png.data(), n)), Error) << n;
}

TEST(Image, CapsAreCheckedBeforeDecoding) {
  std::vector<uint8_t> png = rgb_png(4, 4, some_pixels(4, 4));
  ImageLimits small;
  small.max_pixels = 15;
  try {
    decode_image(png, small);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode_image(std::vector<uint8_t>{'G', 'I', 'F', '8'}), Error);
}

TEST(Image, FlatPicturesStayFlatUnderEveryFilter) {
  RgbImage flat;
  flat.width = 13;
  flat.height = 7;
  for (int64_t i = 0; i < flat.width * flat.height; ++i) flat.pixels.insert(flat.pixels.end(), {200, 17, 90});
  for (int f = 0; f <= 5; ++f)
    for (auto [w, h] : std::array<std::pair<int64_t, int64_t>, 4>{{{5, 3}, {40, 9}, {13, 30}, {1, 1}}}) {
      const RgbImage out = resize_image(flat, w, h, resample_from_pil(f));
      ASSERT_EQ(out.pixels.size(), static_cast<size_t>(w * h * 3));
      for (int64_t i = 0; i < w * h; ++i) {
        EXPECT_EQ(out.pixels[i * 3], 200) << f;
        EXPECT_EQ(out.pixels[i * 3 + 1], 17) << f;
        EXPECT_EQ(out.pixels[i * 3 + 2], 90) << f;
      }
    }
}

TEST(Image, NearestTakesPillowsSamples) {
  RgbImage row;
  row.width = 4;
  row.height = 1;
  row.pixels = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
  const RgbImage half = resize_image(row, 2, 1, Resample::Nearest);
  EXPECT_EQ(half.pixels, (std::vector<uint8_t>{1, 1, 1, 3, 3, 3}));  // coordinates 1, 3
}

TEST(Image, PreprocessingRescalesAndNormalizes) {
  RgbImage one;
  one.width = one.height = 1;
  one.pixels = {0, 255, 51};
  ImageProcessorConfig c;
  c.do_resize = false;
  const PixelValues px = preprocess_image(one, c);
  ASSERT_EQ(px.values.size(), 3u);
  EXPECT_EQ(px.values[0], -1.0f);
  EXPECT_EQ(px.values[1], 1.0f);
  EXPECT_EQ(px.values[2], (static_cast<float>(51.0 / 255.0) - 0.5f) / 0.5f);
  EXPECT_THROW(ImageProcessorConfig::from_json(nlohmann::json::parse(R"({"size": {"shortest_edge": 224}})")), Error);
}

}  // namespace
}  // namespace tessera

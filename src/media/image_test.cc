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

// A 9 × 6 baseline JPEG Pillow wrote (quality 75, optimized Huffman
// tables), and the pixels Pillow decodes from it.
const std::vector<uint8_t> kJpeg = {
    255, 216, 255, 224, 0, 16, 74, 70, 73, 70, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 255, 219, 0, 67, 0, 8, 6, 6, 7,
    6, 5, 8, 7, 7, 7, 9, 9, 8, 10, 12, 20, 13, 12, 11, 11, 12, 25, 18, 19, 15, 20, 29, 26, 31, 30, 29, 26, 28,
    28, 32, 36, 46, 39, 32, 34, 44, 35, 28, 28, 40, 55, 41, 44, 48, 49, 52, 52, 52, 31, 39, 57, 61, 56, 50,
    60, 46, 51, 52, 50, 255, 219, 0, 67, 1, 9, 9, 9, 12, 11, 12, 24, 13, 13, 24, 50, 33, 28, 33, 50, 50, 50,
    50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50,
    50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 255, 192, 0, 17, 8, 0,
    6, 0, 9, 3, 1, 34, 0, 2, 17, 1, 3, 17, 1, 255, 196, 0, 21, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 3, 255, 196, 0, 34, 16, 0, 1, 3, 3, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 17, 0, 4, 19, 5,
    18, 49, 22, 33, 85, 148, 209, 255, 196, 0, 21, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 5,
    255, 196, 0, 31, 17, 0, 2, 2, 1, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 33, 49, 65, 81, 5, 17,
    145, 255, 218, 0, 12, 3, 1, 0, 2, 17, 3, 17, 0, 63, 0, 133, 182, 181, 109, 129, 171, 39, 211, 116, 183,
    177, 23, 94, 135, 1, 110, 103, 31, 96, 169, 145, 201, 0, 241, 9, 19, 180, 109, 168, 117, 190, 155, 226,
    174, 189, 213, 124, 165, 42, 213, 79, 25, 86, 196, 174, 178, 47, 176, 53, 220, 141, 75, 56, 59, 17, 192,
    31, 49, 172, 83, 129, 163, 82, 87, 150, 239, 188, 255, 217};
const std::vector<uint8_t> kJpegPixels = {
    118, 113, 154, 192, 216, 216, 55, 134, 55, 155, 242, 129, 177, 216, 123, 147, 156, 109, 140, 134, 162, 73,
    88, 119, 112, 185, 142, 127, 118, 171, 6, 24, 36, 128, 204, 132, 71, 152, 50, 112, 146, 69, 122, 127, 87,
    152, 143, 160, 156, 170, 183, 73, 142, 97, 121, 103, 179, 159, 170, 202, 32, 100, 43, 128, 200, 118, 174,
    196, 150, 46, 41, 21, 210, 197, 191, 76, 87, 70, 139, 201, 150, 41, 0, 92, 159, 147, 195, 171, 216, 175,
    153, 198, 143, 149, 140, 143, 255, 227, 247, 178, 140, 137, 187, 171, 158, 177, 207, 199, 107, 31, 131,
    136, 86, 145, 169, 174, 151, 180, 184, 161, 136, 81, 146, 184, 101, 181, 168, 88, 113, 207, 144, 171, 95,
    70, 154, 162, 67, 171, 110, 41, 104, 146, 133, 117, 67, 50, 43, 84, 4, 99, 183, 75, 186, 176, 74, 114,
    145, 59, 106, 83, 30, 162};

TEST(Image, JpegDecodesToPillowsPixels) {
  const RgbImage image = decode_image(kJpeg);
  EXPECT_EQ(image.width, 9);
  EXPECT_EQ(image.height, 6);
  EXPECT_EQ(image.pixels, kJpegPixels);
}

// A JPEG cut anywhere before its end-of-image marker is an error (as Pillow's
// "image file is truncated"), never a picture padded with gray.
TEST(Image, EveryJpegTruncationIsAnError) {
  for (size_t n = 0; n + 2 < kJpeg.size(); ++n)
    EXPECT_THROW(decode_image(std::span(kJpeg.data(), n)), Error) << n;
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

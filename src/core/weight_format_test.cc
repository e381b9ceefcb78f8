#include "core/weight_format.h"

#include <bit>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/half.h"

namespace tessera {
namespace {

// What a LUT entry decodes to: the exact product scale · entry rounded once
// to f32 (the product of two floats is exact in double).
float scaled(float scale, float entry) { return static_cast<float>(static_cast<double>(scale) * entry); }

constexpr WeightFormat kAll[] = {WeightFormat::F32,  WeightFormat::F16,  WeightFormat::BF16, WeightFormat::Int8,
                                 WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2};

TEST(WeightFormat, NamesRoundTrip) {
  const char* names[] = {"f32", "f16", "bf16", "int8", "lut4", "lut3", "lut2", "q4_0"};
  const WeightFormat all[] = {WeightFormat::F32,  WeightFormat::F16,  WeightFormat::BF16, WeightFormat::Int8,
                              WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2, WeightFormat::Q4_0};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(weight_format_name(all[i]), names[i]);
    ASSERT_TRUE(weight_format_from_name(names[i]).has_value()) << names[i];
    EXPECT_EQ(*weight_format_from_name(names[i]), all[i]);
  }
  EXPECT_FALSE(weight_format_from_name("F16").has_value());
  EXPECT_FALSE(weight_format_from_name("q4_1").has_value());
  EXPECT_FALSE(weight_format_from_name("").has_value());
  EXPECT_FALSE(weight_format_from_name("lut").has_value());
}

TEST(WeightFormat, LutBits) {
  EXPECT_EQ(lut_bits(WeightFormat::Lut4), 4);
  EXPECT_EQ(lut_bits(WeightFormat::Lut3), 3);
  EXPECT_EQ(lut_bits(WeightFormat::Lut2), 2);
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Int8}) {
    EXPECT_EQ(lut_bits(f), 0);
    EXPECT_FALSE(is_lut(f));
  }
  EXPECT_TRUE(is_lut(WeightFormat::Lut4));
  EXPECT_TRUE(is_lut(WeightFormat::Lut3));
  EXPECT_TRUE(is_lut(WeightFormat::Lut2));
}

TEST(WeightFormat, DataBytes) {
  EXPECT_EQ(weight_data_bytes(WeightFormat::F32, 3, 16), 3u * 16 * 4);
  EXPECT_EQ(weight_data_bytes(WeightFormat::F16, 3, 16), 3u * 16 * 2);
  EXPECT_EQ(weight_data_bytes(WeightFormat::BF16, 3, 16), 3u * 16 * 2);
  EXPECT_EQ(weight_data_bytes(WeightFormat::Int8, 3, 16), 3u * 16);
  EXPECT_EQ(weight_data_bytes(WeightFormat::Lut4, 3, 16), 3u * 8);
  EXPECT_EQ(weight_data_bytes(WeightFormat::Lut3, 3, 16), 3u * 6);
  EXPECT_EQ(weight_data_bytes(WeightFormat::Lut2, 3, 16), 3u * 4);
  // Large: a 262144 × 640 embedding does not overflow.
  EXPECT_EQ(weight_data_bytes(WeightFormat::F32, 262144, 640), uint64_t{262144} * 640 * 4);
  EXPECT_EQ(weight_data_bytes(WeightFormat::Lut3, 262144, 640), uint64_t{262144} * 240);
  EXPECT_THROW(weight_data_bytes(WeightFormat::F32, -1, 8), Error);
}

// f32 / f16 / bf16 decode straight from hand-written little-endian bytes.
TEST(WeightFormat, DecodeFloatFormatsFromBytes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  const int64_t rows = 3, cols = 8;
  std::vector<float> w(rows * cols);
  for (float& x : w) x = dist(rng);
  w[5] = 0.0f;
  w[6] = -0.0f;
  w[7] = 1e-6f;  // f16 subnormal

  std::vector<uint8_t> f16(w.size() * 2), bf16(w.size() * 2);
  for (size_t i = 0; i < w.size(); ++i) {
    const uint16_t h = f32_to_f16(w[i]), b = f32_to_bf16(w[i]);
    f16[2 * i] = h & 0xff, f16[2 * i + 1] = h >> 8;
    bf16[2 * i] = b & 0xff, bf16[2 * i + 1] = b >> 8;
  }
  WeightView v;
  v.shape = {rows, cols};
  std::vector<float> out(cols);
  for (int64_t r = 0; r < rows; ++r) {
    v.format = WeightFormat::F32;
    v.data = w.data();
    decode_row(v, r, out.data());
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_EQ(std::bit_cast<uint32_t>(out[c]), std::bit_cast<uint32_t>(w[r * cols + c]));
    v.format = WeightFormat::F16;
    v.data = f16.data();
    decode_row(v, r, out.data());
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_EQ(std::bit_cast<uint32_t>(out[c]), std::bit_cast<uint32_t>(f16_to_f32(f32_to_f16(w[r * cols + c]))));
    v.format = WeightFormat::BF16;
    v.data = bf16.data();
    decode_row(v, r, out.data());
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_EQ(std::bit_cast<uint32_t>(out[c]), std::bit_cast<uint32_t>(bf16_to_f32(f32_to_bf16(w[r * cols + c]))));
  }
}

TEST(WeightFormat, DecodeVector) {
  const float w[4] = {1.0f, -2.0f, 0.5f, 4.0f};
  WeightView v;
  v.shape = {4};
  v.data = w;
  float out[4];
  decode_row(v, 0, out);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], w[i]);
  EXPECT_THROW(decode_row(v, 1, out), Error);
}

TEST(WeightFormat, DecodeInt8IsScaleTimesQRoundedOnce) {
  const int8_t q[2 * 8] = {-127, -1, 0, 1, 2, 63, 100, 127, 5, -5, 7, -7, 0, 0, 127, -128};
  const float scales[2] = {0.1f, 1.0f / 3.0f};
  WeightView v;
  v.format = WeightFormat::Int8;
  v.shape = {2, 8};
  v.data = q;
  v.scales = scales;
  float out[8];
  for (int r = 0; r < 2; ++r) {
    decode_row(v, r, out);
    for (int c = 0; c < 8; ++c) {
      const float want = static_cast<float>(static_cast<double>(scales[r]) * q[r * 8 + c]);  // exact product, one rounding
      EXPECT_EQ(out[c], want) << r << "," << c;
    }
  }
  v.scales = nullptr;
  EXPECT_THROW(decode_row(v, 0, out), Error);
}

// lut4 / lut2 rows written by hand: rows 0-1 use palette 0, rows 2-3 palette 1;
// every row has its own scale (rows sharing a palette have different ones).
TEST(WeightFormat, DecodeLut4AndLut2HandBuilt) {
  const float scales[4] = {1.0f, 0.1f, 2.5f, 1.0f / 3.0f};
  std::vector<float> pal4(2 * 16), pal2(2 * 4);
  for (int i = 0; i < 32; ++i) pal4[i] = 0.25f * static_cast<float>(i) - 3.0f;
  for (int i = 0; i < 8; ++i) pal2[i] = static_cast<float>(i * i) - 10.0f;
  // lut4 indices per row; byte = low nibble (even col) | high nibble (odd col) << 4.
  const uint8_t idx4[4][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {15, 14, 13, 12, 11, 10, 9, 8}, {3, 3, 0, 15, 8, 1, 2, 9},
                              {5, 10, 5, 10, 0, 0, 15, 15}};
  std::vector<uint8_t> d4;
  for (auto& row : idx4)
    for (int c = 0; c < 8; c += 2) d4.push_back(static_cast<uint8_t>(row[c] | (row[c + 1] << 4)));
  EXPECT_EQ(d4[0], 0x10);  // indices 0 (low nibble) and 1 (high nibble)
  const uint8_t idx2[4][8] = {{0, 1, 2, 3, 3, 2, 1, 0}, {3, 3, 3, 3, 0, 0, 0, 0}, {1, 0, 1, 0, 2, 3, 2, 3},
                              {2, 2, 1, 1, 0, 3, 0, 3}};
  std::vector<uint8_t> d2;
  for (auto& row : idx2)
    for (int c = 0; c < 8; c += 4)
      d2.push_back(static_cast<uint8_t>(row[c] | (row[c + 1] << 2) | (row[c + 2] << 4) | (row[c + 3] << 6)));
  EXPECT_EQ(d2[0], 0xe4);  // 0,1,2,3 from the low bits up

  WeightView v4;
  v4.format = WeightFormat::Lut4;
  v4.shape = {4, 8};
  v4.data = d4.data();
  v4.scales = scales;
  v4.palette = pal4.data();
  v4.group_size = 2;
  WeightView v2 = v4;
  v2.format = WeightFormat::Lut2;
  v2.data = d2.data();
  v2.palette = pal2.data();
  float out[8];
  for (int r = 0; r < 4; ++r) {
    decode_row(v4, r, out);
    for (int c = 0; c < 8; ++c) EXPECT_EQ(out[c], scaled(scales[r], pal4[(r / 2) * 16 + idx4[r][c]])) << r << "," << c;
    decode_row(v2, r, out);
    for (int c = 0; c < 8; ++c) EXPECT_EQ(out[c], scaled(scales[r], pal2[(r / 2) * 4 + idx2[r][c]])) << r << "," << c;
  }
  // Spot checks written out: row 0 (scale 1) is the palette entry itself;
  // row 1 (lut4 index 15 of palette 0 = 0.75) is 0.1f · 0.75f; row 2 (lut2
  // index 1 of palette 1 = 15) is 2.5 · 15.
  decode_row(v4, 0, out);
  EXPECT_EQ(out[3], 0.25f * 3 - 3.0f);
  decode_row(v4, 1, out);
  EXPECT_EQ(out[0], 0.1f * 0.75f);
  decode_row(v2, 2, out);
  EXPECT_EQ(out[0], 37.5f);
  // A zero scale gives zeros whatever the palette says.
  const float zero_scales[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  v4.scales = zero_scales;
  for (int r = 0; r < 4; ++r) {
    decode_row(v4, r, out);
    for (int c = 0; c < 8; ++c) EXPECT_EQ(out[c], 0.0f) << r << "," << c;
  }
}

// Independent bit-level packer: index c's bit b is bit (c·bits + b) of the
// row, i.e. bit (p % 8) of byte p / 8.
std::vector<uint8_t> reference_pack(const std::vector<int>& idx, int bits) {
  std::vector<uint8_t> out(idx.size() * bits / 8, 0);
  for (size_t c = 0; c < idx.size(); ++c)
    for (int b = 0; b < bits; ++b)
      if ((idx[c] >> b) & 1) {
        const size_t p = c * bits + b;
        out[p / 8] |= static_cast<uint8_t>(1u << (p % 8));
      }
  return out;
}

TEST(WeightFormat, DecodeLut3AcrossByteBoundaries) {
  // Row 0: 0..7 twice; row 1: 7..0 twice. Indices 2 and 5 straddle bytes.
  std::vector<int> row0, row1;
  for (int k = 0; k < 16; ++k) row0.push_back(k % 8), row1.push_back(7 - k % 8);
  const std::vector<uint8_t> p0 = reference_pack(row0, 3), p1 = reference_pack(row1, 3);
  ASSERT_EQ(p0.size(), 6u);
  // 0..7 as 3-bit fields from the low end: 0xFAC688 little-endian.
  EXPECT_EQ(p0[0], 0x88);
  EXPECT_EQ(p0[1], 0xc6);
  EXPECT_EQ(p0[2], 0xfa);
  EXPECT_EQ(p0[3], 0x88);
  std::vector<uint8_t> data(p0);
  data.insert(data.end(), p1.begin(), p1.end());
  float pal[8];
  for (int i = 0; i < 8; ++i) pal[i] = 1.5f * static_cast<float>(i) - 4.0f;
  const float scales[2] = {0.3f, 4.0f};
  WeightView v;
  v.format = WeightFormat::Lut3;
  v.shape = {2, 16};
  v.data = data.data();
  v.scales = scales;
  v.palette = pal;
  v.group_size = 2;
  float out[16];
  decode_row(v, 0, out);
  for (int c = 0; c < 16; ++c) EXPECT_EQ(out[c], scaled(0.3f, pal[row0[c]])) << c;
  decode_row(v, 1, out);
  for (int c = 0; c < 16; ++c) EXPECT_EQ(out[c], 4.0f * pal[row1[c]]) << c;
}

// Random indices for every LUT width and several groups against the
// reference packer.
TEST(WeightFormat, DecodeLutRandomAgainstReference) {
  std::mt19937 rng(5);
  for (WeightFormat f : {WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2}) {
    const int bits = lut_bits(f), k = 1 << bits;
    const int64_t rows = 6, cols = 24, gs = 3;
    std::vector<float> pal((rows / gs) * k);
    for (size_t i = 0; i < pal.size(); ++i) pal[i] = static_cast<float>(i) * 0.125f - 1.0f;
    std::vector<float> scales(rows);
    for (float& s : scales) s = static_cast<float>(rng() % 1000 + 1) / 257.0f;  // (0, 4), rarely exact
    std::vector<std::vector<int>> idx(rows, std::vector<int>(cols));
    std::vector<uint8_t> data;
    for (auto& row : idx) {
      for (int& x : row) x = static_cast<int>(rng() % k);
      const auto packed = reference_pack(row, bits);
      data.insert(data.end(), packed.begin(), packed.end());
    }
    ASSERT_EQ(data.size(), weight_data_bytes(f, rows, cols));
    WeightView v;
    v.format = f;
    v.shape = {rows, cols};
    v.data = data.data();
    v.scales = scales.data();
    v.palette = pal.data();
    v.group_size = gs;
    std::vector<float> out(cols);
    for (int64_t r = 0; r < rows; ++r) {
      decode_row(v, r, out.data());
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(out[c], scaled(scales[r], pal[(r / gs) * k + idx[r][c]])) << bits << " " << r << "," << c;
    }
  }
}

TEST(WeightFormat, DecodeRejectsBadViews) {
  const uint8_t data[16] = {};
  const float pal[16] = {};
  const float scales[2] = {1.0f, 1.0f};
  float out[8];
  WeightView v;
  v.format = WeightFormat::Lut4;
  v.shape = {2, 8};
  v.data = data;
  v.scales = scales;
  v.palette = pal;
  v.group_size = 2;
  decode_row(v, 1, out);
  EXPECT_THROW(decode_row(v, 2, out), Error);
  EXPECT_THROW(decode_row(v, -1, out), Error);
  v.group_size = 0;
  EXPECT_THROW(decode_row(v, 0, out), Error);
  v.group_size = 2;
  v.palette = nullptr;
  EXPECT_THROW(decode_row(v, 0, out), Error);
  v.palette = pal;
  // Every LUT width needs its row scales.
  v.scales = nullptr;
  for (WeightFormat f : {WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2}) {
    v.format = f;
    EXPECT_THROW(decode_row(v, 0, out), Error) << weight_format_name(f);
  }
  v.format = WeightFormat::Lut4;
  v.scales = scales;
  decode_row(v, 0, out);
  v.shape = {2, 6};
  EXPECT_THROW(decode_row(v, 0, out), Error);
  v.shape = {};
  EXPECT_THROW(decode_row(v, 0, out), Error);
}

}  // namespace
}  // namespace tessera

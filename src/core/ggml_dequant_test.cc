#include "core/ggml_dequant.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

// f16 bit patterns used as block scales.
constexpr uint16_t kHalfOne = 0x3c00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400,
                   kHalfEighth = 0x3000, kHalfTwo = 0x4000, kHalfMinusOne = 0xbc00;

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

std::vector<float> run(DType t, const std::vector<uint8_t>& block) {
  const DTypeInfo& info = dtype_info(t);
  EXPECT_EQ(block.size() % info.block_bytes, 0u);
  const uint64_t elems = block.size() / info.block_bytes * info.block_elems;
  std::vector<float> out(elems, std::nanf(""));
  dequantize_row(t, block.data(), out.data(), elems);
  return out;
}

void expect_values(const std::vector<float>& y, std::initializer_list<std::pair<int, float>> want) {
  for (const auto& [i, v] : want) EXPECT_EQ(y[static_cast<size_t>(i)], v) << "element " << i;
}

// Q4_0: f16 d | 16 bytes; element j = low nibble of qs[j], element j+16 = high nibble.
TEST(Dequant, Q4_0) {
  std::vector<uint8_t> b(18);
  put16(b, 0, kHalfHalf);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = run(DType::Q4_0, b);
  // x = 0.5 * (q - 8)
  expect_values(y, {{0, -4.0f}, {8, 0.0f}, {15, 3.5f}, {16, 3.5f}, {31, -4.0f}});
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8));
    EXPECT_EQ(y[16 + j], 0.5f * static_cast<float>(7 - j));
  }
}

TEST(Dequant, Q4_1) {
  std::vector<uint8_t> b(20);
  put16(b, 0, kHalfQuarter);
  put16(b, 2, kHalfMinusOne);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  // x = 0.25 * q - 1
  expect_values(run(DType::Q4_1, b), {{0, -1.0f}, {15, 2.75f}, {16, 2.75f}, {31, -1.0f}, {4, 0.0f}});
}

// Q5_0: f16 d | u32 qh | 16 bytes. Low nibbles hold j, high nibbles 15; qh sets
// the 5th bit of elements 0..15 and 31.
TEST(Dequant, Q5_0) {
  std::vector<uint8_t> b(22);
  put16(b, 0, kHalfOne);
  const uint32_t qh = 0x8000ffffu;
  std::memcpy(&b[2], &qh, 4);  // little-endian host assumed by this test
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>(j | 0xf0);
  // x = q - 16: element j<16 -> (j + 16) - 16 = j; element 16+j -> 15 - 16; element 31 -> 31 - 16
  expect_values(run(DType::Q5_0, b), {{0, 0.0f}, {5, 5.0f}, {15, 15.0f}, {16, -1.0f}, {30, -1.0f}, {31, 15.0f}});
}

TEST(Dequant, Q5_1) {
  std::vector<uint8_t> b(24);
  put16(b, 0, kHalfHalf);
  put16(b, 2, kHalfOne);
  const uint32_t qh = 0x8000ffffu;
  std::memcpy(&b[4], &qh, 4);
  for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<uint8_t>(j | 0xf0);
  // x = 0.5 * q + 1
  expect_values(run(DType::Q5_1, b), {{0, 9.0f}, {3, 10.5f}, {16, 8.5f}, {31, 16.5f}});
}

TEST(Dequant, Q8_0AcrossTwoBlocks) {
  std::vector<uint8_t> b(68);
  put16(b, 0, kHalfEighth);
  put16(b, 34, kHalfMinusOne);
  for (int j = 0; j < 32; ++j) {
    b[2 + j] = static_cast<uint8_t>(j * 8 - 128);  // int8: -128, -120, ..., 120
    b[36 + j] = static_cast<uint8_t>(j);
  }
  expect_values(run(DType::Q8_0, b), {{0, -16.0f}, {16, 0.0f}, {31, 15.0f}, {32, -0.0f}, {33, -1.0f}, {63, -31.0f}});
}

TEST(Dequant, IQ4_NL) {
  std::vector<uint8_t> b(18);
  put16(b, 0, kHalfTwo);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | (j << 4));
  // x = 2 * kvalues[q], kvalues = {-127, -104, ..., 89, 113}
  expect_values(run(DType::IQ4_NL, b), {{0, -254.0f}, {7, -20.0f}, {8, 2.0f}, {16, -254.0f}, {31, 226.0f}});
}

// Q2_K: scales[16] | qs[64] | f16 d | f16 dmin. Every qs byte is 0b11100100, so
// plane j (bits 2j..2j+1) holds the value j: element e has q = (e % 128) / 32.
// Sub-block scales are 1 with min 2, except sub-block 5: scale 3, min 3.
TEST(Dequant, Q2_K) {
  std::vector<uint8_t> b(84);
  for (int s = 0; s < 16; ++s) b[s] = 0x21;
  b[5] = 0x33;
  for (int i = 0; i < 64; ++i) b[16 + i] = 0xe4;
  put16(b, 80, kHalfOne);
  put16(b, 82, kHalfHalf);
  // x = (1 * scale) * q - (0.5 * min)
  expect_values(run(DType::Q2_K, b), {{0, -1.0f}, {15, -1.0f}, {40, 0.0f}, {80, 4.5f}, {95, 4.5f}, {200, 1.0f}, {255, 2.0f}});
}

// Q3_K: hmask[32] | qs[64] | scales[12] | f16 d. Low bits as in Q2_K (q = plane
// index); all hmask bits set (no -4) except element 3 (hmask[3] bit 0) and
// element 148 (hmask[20] bit 4). All 6-bit scales are 33 (-> 1) except
// sub-block 9: 0 (-> -32).
TEST(Dequant, Q3_K) {
  std::vector<uint8_t> b(110);
  for (int i = 0; i < 32; ++i) b[i] = 0xff;
  b[3] = 0xfe;
  b[20] = 0xef;
  for (int i = 0; i < 64; ++i) b[32 + i] = 0xe4;
  for (int i = 0; i < 8; ++i) b[96 + i] = 0x11;  // low 4 bits of scales s and s + 8
  b[96 + 1] = 0x01;                              // scale 9: low bits 0
  for (int i = 8; i < 12; ++i) b[96 + i] = 0xaa;  // high 2 bits: 2 for every scale
  b[96 + 9] = 0x8a;                              // scale 9: high bits 0
  put16(b, 108, kHalfTwo);
  // x = (2 * scale) * q
  expect_values(run(DType::Q3_K, b),
                {{2, 0.0f}, {3, -8.0f}, {40, 2.0f}, {100, 6.0f}, {148, 256.0f}, {150, -0.0f}, {255, 6.0f}});
}

// The 12 scale bytes shared by the Q4_K and Q5_K tests:
// scales = {1, 2, 3, 4, 33, 5, 6, 63}, mins = {0, 1, 2, 3, 4, 40, 0, 7}.
constexpr uint8_t kKScales[12] = {0x81, 0x02, 0x03, 0xc4, 0x00, 0x81, 0x02, 0x03, 0x41, 0x85, 0x06, 0x7f};

// Q4_K: f16 d | f16 dmin | scales[12] | qs[128]. Sub-block s reads the low
// (even s) or high (odd s) nibbles of qs[32 * (s / 2) + l]; low nibble = l % 16,
// high nibble = 15 - l % 16.
TEST(Dequant, Q4_K) {
  std::vector<uint8_t> b(144);
  put16(b, 0, kHalfOne);
  put16(b, 2, kHalfHalf);
  std::memcpy(&b[4], kKScales, 12);
  for (int i = 0; i < 128; ++i) b[16 + i] = static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4));
  // x = scale * q - 0.5 * min
  expect_values(run(DType::Q4_K, b),
                {{0, 0.0f}, {33, 27.5f}, {131, 97.0f}, {160, 55.0f}, {240, 941.5f}, {255, -3.5f}});
}

// Q5_K: as Q4_K plus qh[32] between scales and qs; element l of sub-block s gets
// 16 added when bit s of qh[l] is set. qh[l] = 1 << (l % 8).
TEST(Dequant, Q5_K) {
  std::vector<uint8_t> b(176);
  put16(b, 0, kHalfOne);
  put16(b, 2, kHalfHalf);
  std::memcpy(&b[4], kKScales, 12);
  for (int l = 0; l < 32; ++l) b[16 + l] = static_cast<uint8_t>(1u << (l % 8));
  for (int i = 0; i < 128; ++i) b[48 + i] = static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4));
  expect_values(run(DType::Q5_K, b),
                {{0, 16.0f}, {33, 59.5f}, {131, 97.0f}, {132, 658.0f}, {240, 941.5f}, {247, 1508.5f}});
}

// Q6_K: ql[128] | qh[64] | int8 scales[16] | f16 d. ql bytes 0x21 give low bits
// 1 (first 64 of each 128) or 2 (last 64); qh bytes 0b11100100 give high bits
// (r % 128) / 32. scales[s] = s - 8, d = 0.5.
TEST(Dequant, Q6_K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i) b[i] = 0x21;
  for (int i = 0; i < 64; ++i) b[128 + i] = 0xe4;
  for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(s - 8);
  put16(b, 208, kHalfHalf);
  // x = (0.5 * scale) * ((low | high << 4) - 32)
  expect_values(run(DType::Q6_K, b), {{0, 124.0f}, {64, -4.0f}, {100, -18.0f}, {255, 63.0f}});
}

TEST(Dequant, PlainTypes) {
  {
    const std::vector<uint8_t> b = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c};  // 1, -2, 2^-24, inf
    const auto y = run(DType::F16, b);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -2.0f);
    EXPECT_EQ(y[2], std::ldexp(1.0f, -24));
    EXPECT_EQ(y[3], std::numeric_limits<float>::infinity());
  }
  {
    const std::vector<uint8_t> b = {0x80, 0x3f, 0xc0, 0xbf};  // bf16 1.0, -1.5
    const auto y = run(DType::BF16, b);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -1.5f);
  }
  {
    const float v[2] = {3.25f, -0.0f};
    std::vector<uint8_t> b(8);
    std::memcpy(b.data(), v, 8);
    const auto y = run(DType::F32, b);
    EXPECT_EQ(y[0], 3.25f);
    EXPECT_TRUE(std::signbit(y[1]));
  }
  {
    const double v = 0.1;
    std::vector<uint8_t> b(8);
    std::memcpy(b.data(), &v, 8);
    EXPECT_EQ(run(DType::F64, b)[0], 0.1f);  // rounded to nearest float
  }
  EXPECT_EQ(run(DType::I8, {0xff, 0x7f}), (std::vector<float>{-1.0f, 127.0f}));
  EXPECT_EQ(run(DType::U8, {0xff}), std::vector<float>{255.0f});
  EXPECT_EQ(run(DType::I16, {0x00, 0x80}), std::vector<float>{-32768.0f});
  EXPECT_EQ(run(DType::I32, {0xfe, 0xff, 0xff, 0xff}), std::vector<float>{-2.0f});
  EXPECT_EQ(run(DType::I64, {0x05, 0, 0, 0, 0, 0, 0, 0x80}), std::vector<float>{-9.223372036854775808e18f});
}

TEST(Dequant, Errors) {
  std::vector<uint8_t> b(18);
  std::vector<float> out(32);
  EXPECT_THROW(dequantize_row(DType::Q4_0, b.data(), out.data(), 31), Error);
  EXPECT_THROW(dequantize_row(DType::Q6_K, b.data(), out.data(), 32), Error);
  EXPECT_THROW(dequantize_row(DType::BOOL, b.data(), out.data(), 1), Error);
  EXPECT_FALSE(can_dequantize(DType::BOOL));
  EXPECT_TRUE(can_dequantize(DType::IQ4_NL));
  dequantize_row(DType::Q4_0, b.data(), out.data(), 0);  // zero elements: nothing to do

  TensorView t;
  t.name = "w";
  t.dtype = DType::Q4_0;
  t.shape = {2, 32};
  t.data = b.data();
  t.nbytes = 18;  // one block, but the shape needs two
  try {
    dequantize(t);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "tensor 'w'");
  }
  t.shape = {1, 32};
  put16(b, 0, kHalfOne);
  b[2] = 0x9f;  // element 0: 15 - 8 = 7, element 16: 9 - 8 = 1
  const std::vector<float> y = dequantize(t);
  ASSERT_EQ(y.size(), 32u);
  EXPECT_EQ(y[0], 7.0f);
  EXPECT_EQ(y[16], 1.0f);
  EXPECT_EQ(y[1], -8.0f);
}

}  // namespace
}  // namespace tessera

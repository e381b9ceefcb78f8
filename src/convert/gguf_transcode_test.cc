// Transcoding quantized GGUF tensors into blk4 / blk8 is lossless: for every
// ggml block format, decode_row of the transcoded weight gives the ggml
// reference's f32 values (core/ggml_dequant.h) bit for bit, in the row order
// asked for.
#include "convert/gguf_transcode.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/ggml_dequant.h"
#include "core/half.h"
#include "kernels/interleaved_linear.h"

namespace tessera {
namespace {

// Byte offsets of each format's f16 fields (d, and m / dmin where present).
std::vector<int> half_fields(DType t) {
  switch (t) {
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: return {0, 2};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::Q6_K: return {208};
    default: return {0};
  }
}

// Random blocks of `t` with finite f16 fields of a few magnitudes.
std::vector<uint8_t> random_blocks(std::mt19937& rng, DType t, uint64_t elems) {
  const DTypeInfo& info = dtype_info(t);
  std::vector<uint8_t> bytes(*dtype_bytes(t, elems));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> mag(-3.0f, 3.0f);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  for (uint64_t b = 0; b < elems / info.block_elems; ++b)
    for (int at : half_fields(t)) {
      const uint16_t h = f32_to_f16(std::ldexp(mag(rng), -6 + static_cast<int>(b % 5)));
      std::memcpy(bytes.data() + b * info.block_bytes + at, &h, 2);
    }
  return bytes;
}

TensorView view_of(DType t, const std::vector<uint8_t>& bytes, uint64_t rows, uint64_t cols) {
  TensorView v;
  v.name = "blk.0.ffn_up.weight";
  v.dtype = t;
  v.shape = {rows, cols};
  v.data = bytes.data();
  v.nbytes = bytes.size();
  return v;
}

const DType kTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL,
                        DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};

TEST(GgufTranscode, EveryBlockFormatKeepsTheReferenceValuesBitForBit) {
  std::mt19937 rng(3);
  for (DType t : kTypes) {
    ASSERT_TRUE(can_transcode(t)) << dtype_name(t);
    const uint64_t rows = 5, cols = dtype_info(t).block_elems == 256 ? 512 : 96;
    const std::vector<uint8_t> bytes = random_blocks(rng, t, rows * cols);
    const QuantizedWeight q = transcode_ggml_blocks(view_of(t, bytes, rows, cols));
    EXPECT_EQ(q.format, transcoded_format(t)) << dtype_name(t);
    const WeightView v = q.view();
    std::vector<float> want(cols), got(cols);
    for (uint64_t r = 0; r < rows; ++r) {
      dequantize_row(t, bytes.data() + r * (bytes.size() / rows), want.data(), cols);
      decode_row(v, static_cast<int64_t>(r), got.data());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), cols * sizeof(float)), 0) << dtype_name(t) << " row " << r;
    }
    EXPECT_EQ(weight_view_bytes(v), q.data.size() + q.block_params.size() + q.palette.size() * sizeof(float));
  }
}

TEST(GgufTranscode, ABundleTakesTheSourcesBytes) {
  // Codes at the source's bits; the simple formats' f16 scales as they are;
  // the k-quants' as an f16 per 256 columns times a byte per sub-block (Q4_K
  // and Q5_K: 4 bytes per 256 columns more than their packed 6-bit scales).
  // Q2_K and Q3_K keep a byte per code. Per-tensor codebooks aside.
  std::mt19937 rng(4);
  const int64_t rows = 4, cols = 512;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q5_0, DType::Q5_1, DType::IQ4_NL, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K}) {
    const std::vector<uint8_t> bytes = random_blocks(rng, t, rows * cols);
    const QuantizedWeight q = transcode_ggml_blocks(view_of(t, bytes, rows, cols));
    const bool k_quant = dtype_info(t).block_elems == 256;
    EXPECT_FALSE(q.block_f32) << dtype_name(t);
    EXPECT_EQ(q.block_super, k_quant ? 256 : 0) << dtype_name(t);
    const uint64_t extra = t == DType::Q4_K || t == DType::Q5_K ? rows * cols / 256 * 4 : 0;
    EXPECT_EQ(q.data.size() + q.block_params.size(), bytes.size() + extra) << dtype_name(t);
    EXPECT_EQ(q.palette.size(), t == DType::Q8_0 ? 0u : size_t{1} << block_code_bits(q.format)) << dtype_name(t);
  }
}

// Every type a bundle can take from a GGUF runs on the fast level's
// interleaved kernels: its transcoded form is one of the forms they are
// compiled for (kernels/interleaved_walk.h, VectorForms).
TEST(GgufTranscode, EveryTranscodedTypeHasInterleavedVectorKernels) {
  std::mt19937 rng(6);
  for (DType t : kTypes) {
    const std::vector<uint8_t> bytes = random_blocks(rng, t, 16 * 512);
    const QuantizedWeight q = transcode_ggml_blocks(view_of(t, bytes, 16, 512));
    EXPECT_TRUE(kernels::InterleavedWeights::supported(q.view())) << dtype_name(t);
  }
}

TEST(GgufTranscode, RowsFollowTheRequestedOrder) {
  std::mt19937 rng(5);
  const std::vector<uint8_t> bytes = random_blocks(rng, DType::Q4_K, 4 * 256);
  const std::vector<int64_t> order = {2, 0, 3, 1};
  const QuantizedWeight q = transcode_ggml_blocks(view_of(DType::Q4_K, bytes, 4, 256), order);
  std::vector<float> want(256), got(256);
  for (int64_t r = 0; r < 4; ++r) {
    dequantize_row(DType::Q4_K, bytes.data() + order[r] * 144, want.data(), 256);
    decode_row(q.view(), r, got.data());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), sizeof(float) * 256), 0) << r;
  }
}

TEST(GgufTranscode, BadTensorsAreRefusedByName) {
  std::mt19937 rng(6);
  std::vector<uint8_t> bytes = random_blocks(rng, DType::Q8_0, 2 * 64);
  EXPECT_THROW(transcode_ggml_blocks(view_of(DType::Q8_0, bytes, 2, 96)), Error);  // size does not match
  EXPECT_THROW(transcode_ggml_blocks(view_of(DType::F16, bytes, 2, 64)), Error);   // not a block format
  EXPECT_THROW(transcode_ggml_blocks(view_of(DType::Q8_0, bytes, 2, 64), {0, 2}), Error);  // row out of range
  EXPECT_FALSE(can_transcode(DType::F32));
  try {
    transcode_ggml_blocks(view_of(DType::Q8_0, bytes, 2, 96));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera

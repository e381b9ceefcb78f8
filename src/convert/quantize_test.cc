#include "convert/quantize.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "convert/palettize.h"
#include "core/error.h"
#include "core/half.h"

namespace tessera {
namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> w(static_cast<size_t>(n));
  for (float& x : w) x = dist(rng);
  return w;
}

std::vector<float> decode_all(const QuantizedWeight& q) {
  const WeightView v = q.view();
  std::vector<float> out(static_cast<size_t>(v.rows() * v.cols()));
  for (int64_t r = 0; r < v.rows(); ++r) decode_row(v, r, out.data() + r * v.cols());
  return out;
}

double mse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return s / static_cast<double>(a.size());
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Quantize, F32IsACopy) {
  auto w = gaussian(6 * 16, 1);
  w[3] = -0.0f;
  const QuantizedWeight q = quantize_weight(w.data(), {6, 16}, WeightFormat::F32, {});
  EXPECT_EQ(q.format, WeightFormat::F32);
  EXPECT_EQ(q.shape, (std::vector<int64_t>{6, 16}));
  ASSERT_EQ(q.data.size(), weight_data_bytes(WeightFormat::F32, 6, 16));
  EXPECT_TRUE(q.scales.empty());
  EXPECT_TRUE(q.palette.empty());
  EXPECT_EQ(q.mse, 0.0);
  const auto d = decode_all(q);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(d[i]), std::bit_cast<uint32_t>(w[i]));
}

TEST(Quantize, HalfFormatsRoundToNearestEven) {
  // Gaussian values at several scales plus exact ties between two f16 / bf16
  // neighbours (1 + 2^-11 lies halfway between 1 and 1 + 2^-10).
  auto w = gaussian(4 * 64, 2, 100.0f);
  for (int i = 0; i < 64; ++i) w[i] *= 1e-5f;  // f16 subnormals
  w[64] = 1.0f + std::ldexp(1.0f, -11);        // f16 tie: to even (1.0)
  w[65] = 1.0f + 3 * std::ldexp(1.0f, -11);    // f16 tie: to even (1 + 2^-9)
  w[66] = 1.0f + std::ldexp(1.0f, -8);         // bf16 tie: to even (1.0)
  w[67] = 65504.0f;                            // f16 max
  for (WeightFormat f : {WeightFormat::F16, WeightFormat::BF16}) {
    const QuantizedWeight q = quantize_weight(w.data(), {4, 64}, f, {});
    ASSERT_EQ(q.data.size(), weight_data_bytes(f, 4, 64));
    const auto d = decode_all(q);
    for (size_t i = 0; i < w.size(); ++i) {
      const float want = f == WeightFormat::F16 ? f16_to_f32(f32_to_f16(w[i])) : bf16_to_f32(f32_to_bf16(w[i]));
      ASSERT_EQ(std::bit_cast<uint32_t>(d[i]), std::bit_cast<uint32_t>(want)) << weight_format_name(f) << " " << i;
    }
    EXPECT_NEAR(q.mse, mse(d, w), 1e-12 * q.mse + 1e-300);
    if (f == WeightFormat::F16) {
      EXPECT_EQ(d[64], 1.0f);
      EXPECT_EQ(d[65], 1.0f + std::ldexp(1.0f, -9));
      EXPECT_EQ(d[67], 65504.0f);
    } else {
      EXPECT_EQ(d[66], 1.0f);
    }
  }
}

TEST(Quantize, VectorsInFloatFormats) {
  const std::vector<float> w = {1.0f, 2.5f, -3.0f, 0.1f, 7.0f};
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16}) {
    const QuantizedWeight q = quantize_weight(w.data(), {5}, f, {});
    EXPECT_EQ(q.view().rows(), 1);
    EXPECT_EQ(q.view().cols(), 5);
    const auto d = decode_all(q);
    EXPECT_EQ(d[1], 2.5f);
  }
  EXPECT_THROW(quantize_weight(w.data(), {5}, WeightFormat::Int8, {}), Error);
  EXPECT_THROW(quantize_weight(w.data(), {5}, WeightFormat::Lut4, {}), Error);
}

TEST(Quantize, HalfOverflowIsAnError) {
  std::vector<float> w(8, 1.0f);
  w[5] = 70000.0f;
  const std::string m = message_of([&] { quantize_weight(w.data(), {8}, WeightFormat::F16, {}); });
  EXPECT_NE(m.find("overflows f16"), std::string::npos) << m;
  EXPECT_NE(m.find("[5]"), std::string::npos) << m;
  // bf16 has the f32 range; only values that round past its max overflow.
  EXPECT_NO_THROW(quantize_weight(w.data(), {8}, WeightFormat::BF16, {}));
  w[5] = std::numeric_limits<float>::max();
  EXPECT_THROW(quantize_weight(w.data(), {8}, WeightFormat::BF16, {}), Error);
}

TEST(Quantize, Int8ErrorWithinHalfAStep) {
  const int64_t rows = 32, cols = 96;
  auto w = gaussian(rows * cols, 3);
  for (int64_t c = 0; c < cols; ++c) w[5 * cols + c] *= 1e-30f;  // tiny row
  const QuantizedWeight q = quantize_weight(w.data(), {rows, cols}, WeightFormat::Int8, {});
  ASSERT_EQ(q.data.size(), weight_data_bytes(WeightFormat::Int8, rows, cols));
  ASSERT_EQ(q.scales.size(), static_cast<size_t>(rows));
  const auto d = decode_all(q);
  const int8_t* qs = reinterpret_cast<const int8_t*>(q.data.data());
  for (int64_t r = 0; r < rows; ++r) {
    float maxabs = 0;
    for (int64_t c = 0; c < cols; ++c) maxabs = std::max(maxabs, std::fabs(w[r * cols + c]));
    EXPECT_EQ(q.scales[r], maxabs / 127.0f) << r;
    const float s = q.scales[r];
    bool hit127 = false;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      ASSERT_GE(qs[i], -127);
      hit127 |= std::abs(qs[i]) == 127;
      // Half a step, plus the final rounding of scale · q to f32.
      const double tol = 0.5 * s + std::fabs(d[i]) * 0x1.0p-24;
      EXPECT_LE(std::fabs(static_cast<double>(d[i]) - w[i]), tol) << r << "," << c;
    }
    EXPECT_TRUE(hit127) << r;  // the largest magnitude uses the full range
  }
  EXPECT_NEAR(q.mse, mse(d, w), 1e-12 * q.mse);
}

TEST(Quantize, Int8RoundsHalfAwayFromZeroAndHandlesZeroRows) {
  // Row 0: max 127 → scale exactly 1, so w / scale is exact.
  std::vector<float> w = {127.0f, 0.5f, -0.5f, 1.5f, -2.5f, 2.4f, -126.6f, 0.0f,  //
                          0.0f,   0.0f, 0.0f,  0.0f, 0.0f,  0.0f, -0.0f,   0.0f};
  const QuantizedWeight q = quantize_weight(w.data(), {2, 8}, WeightFormat::Int8, {});
  const int8_t* qs = reinterpret_cast<const int8_t*>(q.data.data());
  EXPECT_EQ(q.scales[0], 1.0f);
  const int8_t want[8] = {127, 1, -1, 2, -3, 2, -127, 0};
  for (int c = 0; c < 8; ++c) EXPECT_EQ(qs[c], want[c]) << c;
  // All-zero row: scale 0, q 0, decodes to zeros.
  EXPECT_EQ(q.scales[1], 0.0f);
  for (int c = 8; c < 16; ++c) EXPECT_EQ(qs[c], 0);
  const auto d = decode_all(q);
  for (int c = 8; c < 16; ++c) EXPECT_EQ(d[c], 0.0f);
}

// Index c of a LUT row: bits [c·bits, (c+1)·bits) of the row's little-endian
// bit string (core/weight_format.h), read one bit at a time.
int lut_index(const uint8_t* row, int64_t c, int bits) {
  int x = 0;
  for (int b = 0; b < bits; ++b) {
    const int64_t p = c * bits + b;
    x |= ((row[p / 8] >> (p % 8)) & 1) << b;
  }
  return x;
}

// w[r][c] = scales[r] · palette[r / group_size][index(r, c)], with
// scales[r] = max|w_r| and the palettes those palettize() finds for the rows
// divided by their scales.
TEST(Quantize, LutMatchesItsViewAndReportsMse) {
  const int64_t rows = 48, cols = 64, gs = 16;
  auto w = gaussian(rows * cols, 4);
  for (int64_t c = 0; c < cols; ++c) {
    w[3 * cols + c] *= 1e-3f;   // a row far smaller than the rest of its group
    w[20 * cols + c] *= 50.0f;  // and one far larger
    w[40 * cols + c] = 0.0f;    // an all-zero row
  }
  w[40 * cols + 7] = -0.0f;
  for (WeightFormat f : {WeightFormat::Lut4, WeightFormat::Lut3, WeightFormat::Lut2}) {
    SCOPED_TRACE(weight_format_name(f));
    const int bits = lut_bits(f), k = 1 << bits;
    QuantizeOptions o;
    o.group_size = gs;
    o.seed = 9;
    const QuantizedWeight q = quantize_weight(w.data(), {rows, cols}, f, o);
    EXPECT_EQ(q.format, f);
    EXPECT_EQ(q.shape, (std::vector<int64_t>{rows, cols}));
    EXPECT_EQ(q.group_size, gs);
    ASSERT_EQ(q.data.size(), weight_data_bytes(f, rows, cols));
    ASSERT_EQ(q.palette.size(), static_cast<size_t>((rows / gs) * k));
    ASSERT_EQ(q.scales.size(), static_cast<size_t>(rows));
    const WeightView v = q.view();
    EXPECT_EQ(v.scales, q.scales.data());
    EXPECT_EQ(v.palette, q.palette.data());
    EXPECT_EQ(v.group_size, gs);

    // Scales: each row's largest magnitude, exactly.
    std::vector<float> normalized(w.size());
    for (int64_t r = 0; r < rows; ++r) {
      float amax = 0;
      for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(w[r * cols + c]));
      EXPECT_EQ(q.scales[r], amax) << r;
      for (int64_t c = 0; c < cols; ++c) normalized[r * cols + c] = amax > 0 ? w[r * cols + c] / amax : 0.0f;
    }
    EXPECT_EQ(q.scales[40], 0.0f);

    // Palettes and indices: palettize() of the normalized rows, same options.
    PalettizeOptions po;
    po.bits = bits;
    po.group_size = gs;
    po.seed = o.seed;
    po.kmeans_iterations = o.kmeans_iterations;
    po.int8_grid = o.int8_palette;
    const Palettized p = palettize(normalized.data(), rows, cols, po);
    EXPECT_EQ(q.palette, p.palette);
    EXPECT_EQ(q.data, p.data);
    for (float e : q.palette) {  // centroids of values in [-1, 1]
      EXPECT_LE(e, 1.0f);
      EXPECT_GE(e, -1.0f);
    }

    // Decoded value = scale · palette entry of its index, rounded once.
    const auto d = decode_all(q);
    const int64_t row_bytes = cols * bits / 8;
    for (int64_t r = 0; r < rows; ++r) {
      const float* pal = q.palette.data() + (r / gs) * k;
      for (int64_t c = 0; c < cols; ++c) {
        const int j = lut_index(q.data.data() + r * row_bytes, c, bits);
        const float want = static_cast<float>(static_cast<double>(q.scales[r]) * pal[j]);
        ASSERT_EQ(d[r * cols + c], want) << r << "," << c;
      }
    }
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(d[40 * cols + c], 0.0f) << c;

    // mse: of the decoded weight (scales applied) against the input.
    EXPECT_NEAR(q.mse, mse(d, w), 1e-9 * q.mse);
    EXPECT_GT(q.mse, 0.0);
    // Each row's error is small relative to its own magnitude: the tiny row
    // is not lost in its group and the huge one does not take the palette.
    for (int64_t r = 0; r < rows; ++r) {
      if (q.scales[r] == 0) continue;
      double sse = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double e = (static_cast<double>(d[r * cols + c]) - w[r * cols + c]) / q.scales[r];
        sse += e * e;
      }
      EXPECT_LT(sse / static_cast<double>(cols), 0.05) << r;
    }
  }
}

TEST(Quantize, ErrorsNameTheProblem) {
  std::vector<float> w(24 * 16, 0.5f);
  auto quant = [&](std::vector<int64_t> shape, WeightFormat f, QuantizeOptions o = {}) {
    return message_of([&] { quantize_weight(w.data(), shape, f, o); });
  };
  // Shapes.
  EXPECT_NE(quant({2, 3, 4}, WeightFormat::F32).find("shape [2, 3, 4]"), std::string::npos);
  EXPECT_NE(quant({}, WeightFormat::F16).find("shape []"), std::string::npos);
  EXPECT_NE(quant({0, 16}, WeightFormat::F32).find("empty"), std::string::npos);
  EXPECT_NE(quant({-2, 16}, WeightFormat::F32).find("negative"), std::string::npos);
  EXPECT_NE(quant({16}, WeightFormat::Int8).find("[rows, cols]"), std::string::npos);
  // LUT shape rules.
  EXPECT_NE(quant({16, 12}, WeightFormat::Lut4).find("multiple of 8, got 12"), std::string::npos);
  {
    const std::string m = quant({24, 16}, WeightFormat::Lut3);  // default group 16
    EXPECT_NE(m.find("24 rows"), std::string::npos) << m;
    EXPECT_NE(m.find("group size 16"), std::string::npos) << m;
  }
  QuantizeOptions g0;
  g0.group_size = 0;
  EXPECT_NE(quant({24, 16}, WeightFormat::Lut2, g0).find("group size must be at least 1"), std::string::npos);
  QuantizeOptions g8;
  g8.group_size = 8;
  EXPECT_EQ(quant({24, 16}, WeightFormat::Lut2, g8), "(no error)");
  EXPECT_EQ(quant({24, 16}, WeightFormat::Int8, g0), "(no error)");  // group size is a LUT option
  // Non-finite inputs: the first one is named.
  w[3 * 16 + 5] = std::nanf("");
  w[7 * 16 + 1] = INFINITY;
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::Int8, WeightFormat::Lut4}) {
    const std::string m = quant({24, 16}, f, g8);
    EXPECT_NE(m.find("[3, 5]"), std::string::npos) << m;
    EXPECT_NE(m.find("not finite"), std::string::npos) << m;
  }
  w[3 * 16 + 5] = 0;
  EXPECT_NE(quant({24, 16}, WeightFormat::BF16).find("inf at [7, 1]"), std::string::npos);
  EXPECT_NE(quant({24 * 16}, WeightFormat::BF16).find("[113]"), std::string::npos);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Activation-aware palettes. As in LLMs, some input columns carry much
// larger activations than the rest, and their weights are smaller (the
// product is what matters). Weighting the k-means by E[x_c²] then lowers the
// layer's output error ||X (W − Q)ᵀ||² well below that of plain palettes, at
// a larger weight error.
TEST(Quantize, InputMomentsLowerTheOutputError) {
  const int64_t rows = 64, cols = 256, tokens = 512;
  std::vector<float> w = gaussian(rows * cols, 31);
  std::vector<float> col_scale(cols, 1.0f);
  for (int64_t c = 0; c < cols; c += 8) col_scale[c] = 30.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] /= col_scale[c];
  std::vector<float> x = gaussian(tokens * cols, 33);
  std::vector<float> moments(cols, 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < cols; ++c) {
      x[t * cols + c] *= col_scale[c];
      moments[c] += x[t * cols + c] * x[t * cols + c] / tokens;
    }
  auto output_error = [&](const std::vector<float>& q) {
    double e = 0;
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double d = 0;
        for (int64_t c = 0; c < cols; ++c) d += (static_cast<double>(w[r * cols + c]) - q[r * cols + c]) * x[t * cols + c];
        e += d * d;
      }
    return e;
  };
  QuantizeOptions o;
  const std::vector<float> plain = decode_all(quantize_weight(w.data(), {rows, cols}, WeightFormat::Lut4, o));
  o.input_moments = &moments;
  const QuantizedWeight aware = quantize_weight(w.data(), {rows, cols}, WeightFormat::Lut4, o);
  const std::vector<float> weighted = decode_all(aware);
  EXPECT_LT(output_error(weighted), 0.7 * output_error(plain));
  EXPECT_GT(mse(weighted, w), mse(plain, w));
  EXPECT_NEAR(aware.mse, mse(weighted, w), 1e-9);

  std::vector<float> short_moments(cols - 1, 1.0f);
  o.input_moments = &short_moments;
  EXPECT_NE(message_of([&] { quantize_weight(w.data(), {rows, cols}, WeightFormat::Lut4, o); }).find("256 columns"),
            std::string::npos);
  std::vector<float> bad = moments;
  bad[5] = -1.0f;
  o.input_moments = &bad;
  EXPECT_THROW(quantize_weight(w.data(), {rows, cols}, WeightFormat::Lut4, o), Error);
  // All-zero moments (no token reached the layer) fall back to plain k-means.
  std::vector<float> zeros(cols, 0.0f);
  o.input_moments = &zeros;
  EXPECT_EQ(decode_all(quantize_weight(w.data(), {rows, cols}, WeightFormat::Lut4, o)), plain);
}

}  // namespace
}  // namespace tessera

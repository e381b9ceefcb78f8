#include "convert/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convert/palettize.h"
#include "core/error.h"
#include "core/half.h"

namespace tessera {
namespace {

constexpr std::string_view kSubject = "quantize_weight";

std::string where(const std::vector<int64_t>& shape, int64_t i) {
  if (shape.size() == 2) return fmt::format("[{}, {}]", i / shape[1], i % shape[1]);
  return fmt::format("[{}]", i);
}

// f16 / bf16: rounds every value with `encode`, fails on overflow to infinity.
template <uint16_t (*Encode)(float), float (*Decode)(uint16_t)>
void encode_half(const float* w, int64_t n, const std::vector<int64_t>& shape, WeightFormat f, QuantizedWeight& q) {
  q.data.resize(static_cast<size_t>(n) * 2);
  double sse = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Encode(w[i]);
    const float back = Decode(h);
    if (std::isinf(back))
      fail("", kSubject, "value {} at {} overflows {}", w[i], where(shape, i), weight_format_name(f));
    q.data[2 * i] = static_cast<uint8_t>(h & 0xff);
    q.data[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    const double d = static_cast<double>(back) - w[i];
    sse += d * d;
  }
  q.mse = sse / static_cast<double>(n);
}

void encode_int8(const float* w, int64_t rows, int64_t cols, QuantizedWeight& q) {
  q.data.resize(static_cast<size_t>(rows * cols));
  q.scales.resize(static_cast<size_t>(rows));
  double sse = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    int8_t* out = reinterpret_cast<int8_t*>(q.data.data()) + r * cols;
    float maxabs = 0;
    for (int64_t c = 0; c < cols; ++c) maxabs = std::max(maxabs, std::fabs(row[c]));
    const float scale = maxabs / 127.0f;
    q.scales[r] = scale;
    for (int64_t c = 0; c < cols; ++c) {
      int8_t v = 0;
      if (scale != 0) {
        const double x = std::round(static_cast<double>(row[c]) / static_cast<double>(scale));  // half away from zero
        v = static_cast<int8_t>(std::clamp(x, -127.0, 127.0));
      }
      out[c] = v;
      const double d = static_cast<double>(scale * static_cast<float>(v)) - row[c];
      sse += d * d;
    }
  }
  q.mse = sse / static_cast<double>(rows * cols);
}

// Column weights for the activation-aware k-means: the moments, with values
// below 1e-6 of their mean raised to that floor (none, i.e. plain k-means,
// if every moment is 0).
std::vector<float> importance_floor(const std::vector<float>& m, int64_t cols) {
  if (static_cast<int64_t>(m.size()) != cols)
    fail("", kSubject, "input moments have {} values for {} columns", m.size(), cols);
  double mean = 0;
  for (int64_t c = 0; c < cols; ++c) {
    if (!(m[c] >= 0 && std::isfinite(m[c])))
      fail("", kSubject, "input moment {} of column {} is not a finite non-negative number", m[c], c);
    mean += m[c];
  }
  mean /= static_cast<double>(cols);
  const float floor = static_cast<float>(mean * 1e-6);
  if (!(floor > 0)) return {};
  std::vector<float> w(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) w[c] = std::max(m[c], floor);
  return w;
}

}  // namespace

// llama.cpp's reference Q4_0 quantizer (quantize_row_q4_0_ref): per block of
// 32, d = (the value of largest magnitude, with its sign) / -8,
// q = min(15, trunc(x / d + 8.5)).
static void encode_q4_0(const float* w, int64_t rows, int64_t cols, QuantizedWeight& q) {
  if (cols % 32 != 0) fail("<input>", kSubject, "q4_0 needs a multiple of 32 columns, got {}", cols);
  const int64_t blocks = cols / 32;
  q.data.assign(static_cast<size_t>(rows * blocks * 18), 0);
  std::vector<float> back(static_cast<size_t>(cols));
  double sse = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* x = w + r * cols + b * 32;
      float amax = 0, max = 0;
      for (int i = 0; i < 32; ++i)
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
      const float d = max / -8.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      uint8_t* out = q.data.data() + (r * blocks + b) * 18;
      const uint16_t dh = f32_to_f16(d);
      out[0] = static_cast<uint8_t>(dh & 0xff);
      out[1] = static_cast<uint8_t>(dh >> 8);
      for (int i = 0; i < 16; ++i) {
        const int lo = std::min(15, static_cast<int>(x[i] * id + 8.5f));
        const int hi = std::min(15, static_cast<int>(x[i + 16] * id + 8.5f));
        out[2 + i] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
    WeightView v;
    v.format = WeightFormat::Q4_0;
    v.shape = {rows, cols};
    v.data = q.data.data();
    decode_row(v, r, back.data());
    for (int64_t c = 0; c < cols; ++c) {
      const double e = static_cast<double>(back[c]) - w[r * cols + c];
      sse += e * e;
    }
  }
  q.mse = sse / static_cast<double>(rows * cols);
}

WeightView QuantizedWeight::view() const {
  WeightView v;
  v.format = format;
  v.shape = shape;
  v.data = data.data();
  v.scales = scales.empty() ? nullptr : scales.data();
  v.palette = palette.empty() ? nullptr : palette.data();
  v.group_size = group_size;
  v.block_params = block_params.empty() ? nullptr : block_params.data();
  v.block_cols = block_cols;
  v.block_f32 = block_f32;
  v.block_offsets = block_offsets;
  v.block_super = block_super;
  return v;
}

QuantizedWeight quantize_weight(const float* w, std::vector<int64_t> shape, WeightFormat format,
                                const QuantizeOptions& o) {
  const std::string_view name = weight_format_name(format);
  if (is_blocked(format))
    fail("", kSubject, "{} holds a quantized GGUF tensor as it is (convert/gguf_transcode.h); f32 values cannot become one",
         name);
  const bool matrix_only = format == WeightFormat::Int8 || format == WeightFormat::Q4_0 || is_lut(format);
  if (shape.empty() || shape.size() > 2 || (matrix_only && shape.size() != 2))
    fail("", kSubject, "shape [{}] cannot be stored as {} (needs {})", fmt::join(shape, ", "), name,
         matrix_only ? "[rows, cols]" : "[cols] or [rows, cols]");
  for (int64_t d : shape)
    if (d < 1) fail("", kSubject, "shape [{}] has an empty or negative dimension", fmt::join(shape, ", "));
  const int64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
  if (cols > std::numeric_limits<int64_t>::max() / 8 / rows)
    fail("", kSubject, "shape [{}] is too large", fmt::join(shape, ", "));
  if (is_lut(format)) {
    if (cols % 8 != 0) fail("", kSubject, "{} needs a column count that is a multiple of 8, got {}", name, cols);
    if (o.group_size < 1) fail("", kSubject, "{} group size must be at least 1, got {}", name, o.group_size);
    if (rows % o.group_size != 0)
      fail("", kSubject, "{} rows is not a multiple of the {} group size {}", rows, name, o.group_size);
  }
  const int64_t n = rows * cols;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(w[i])) fail("", kSubject, "value {} at {} is not finite", w[i], where(shape, i));

  QuantizedWeight q;
  q.format = format;
  q.shape = std::move(shape);
  switch (format) {
    case WeightFormat::F32:
      q.data.resize(static_cast<size_t>(n) * sizeof(float));
      std::memcpy(q.data.data(), w, q.data.size());
      break;
    case WeightFormat::F16: encode_half<f32_to_f16, f16_to_f32>(w, n, q.shape, format, q); break;
    case WeightFormat::BF16: encode_half<f32_to_bf16, bf16_to_f32>(w, n, q.shape, format, q); break;
    case WeightFormat::Int8: encode_int8(w, rows, cols, q); break;
    case WeightFormat::Q4_0: encode_q4_0(w, rows, cols, q); break;
    case WeightFormat::Lut4:
    case WeightFormat::Lut3:
    case WeightFormat::Lut2: {
      PalettizeOptions p;
      p.bits = lut_bits(format);
      p.group_size = o.group_size;
      p.seed = o.seed;
      p.kmeans_iterations = o.kmeans_iterations;
      p.threads = o.threads;
      p.int8_grid = o.int8_palette;
      // Rows are first divided by their largest magnitude, so that the rows
      // sharing a palette share it in relative terms (a row of small weights
      // is not left with two of the 16 entries); the scale is kept per row.
      std::vector<float> normalized(static_cast<size_t>(rows * cols));
      q.scales.resize(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        float amax = 0;
        for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(w[r * cols + c]));
        q.scales[r] = amax;
        for (int64_t c = 0; c < cols; ++c) normalized[r * cols + c] = amax > 0 ? w[r * cols + c] / amax : 0.0f;
      }
      std::vector<float> row_weights, column_weights;
      if (o.input_moments) column_weights = importance_floor(*o.input_moments, cols);
      if (!column_weights.empty()) {
        row_weights.resize(static_cast<size_t>(rows));
        // A zero row (scale 0) has nothing to lose; any positive weight will do.
        for (int64_t r = 0; r < rows; ++r) row_weights[r] = q.scales[r] > 0 ? q.scales[r] * q.scales[r] : 1.0f;
        if (std::any_of(row_weights.begin(), row_weights.end(), [](float v) { return !(v > 0); }))
          for (int64_t r = 0; r < rows; ++r) row_weights[r] = 1.0f;  // scales so small their squares underflow
        p.row_weights = row_weights.data();
        p.column_weights = column_weights.data();
      }
      Palettized r = palettize(normalized.data(), rows, cols, p);
      q.data = std::move(r.data);
      q.palette = std::move(r.palette);
      q.group_size = o.group_size;
      // Error of the stored weight (scale · palette entry) against the input.
      const WeightView v = q.view();
      std::vector<float> row(static_cast<size_t>(cols));
      double sse = 0;
      for (int64_t i = 0; i < rows; ++i) {
        decode_row(v, i, row.data());
        for (int64_t c = 0; c < cols; ++c) {
          const double d = static_cast<double>(row[c]) - w[i * cols + c];
          sse += d * d;
        }
      }
      q.mse = sse / static_cast<double>(rows * cols);
      break;
    }
    case WeightFormat::Blk4:
    case WeightFormat::Blk5:
    case WeightFormat::Blk6:
    case WeightFormat::Blk8: break;  // refused above
  }
  return q;
}

}  // namespace tessera

#include "kernels/qlinear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/dot.h"

namespace tessera::kernels {

bool QLinearWeights::supported(const WeightView& w) {
  if (w.shape.size() != 2 || w.cols() % 64 != 0 || w.data == nullptr) return false;
  if (is_blocked(w.format)) {
    if (w.block_params == nullptr) return false;
    if (w.block_super > 0 && (w.block_f32 || w.block_super % w.block_cols != 0 || w.cols() % w.block_super != 0))
      return false;
    if (w.format == WeightFormat::Blk4) return w.palette != nullptr && w.block_cols == 32;
    if (w.format != WeightFormat::Blk8 && w.palette == nullptr) return false;
    return w.block_cols == 16 || w.block_cols == 32;
  }
  if (w.scales == nullptr) return false;
  if (w.format == WeightFormat::Int8) return true;
  return is_lut(w.format) && w.palette != nullptr && w.group_size >= 1 && w.rows() % w.group_size == 0;
}

QLinearWeights::QLinearWeights(const WeightView& w, Expand expand)
    : format_(w.format),
      view_(w),
      data_(static_cast<const uint8_t*>(w.data)),
      rows_(w.rows()),
      cols_(w.cols()),
      row_bytes_(static_cast<int64_t>(weight_data_bytes(w.format, 1, w.cols()))) {
  if (!supported(w)) fail("", "qlinear", "no integer kernel for a {} weight of shape [{}, {}]", weight_format_name(w.format), rows_, cols_);
  if (is_blocked(format_)) {
    // The codes are the values the kernels multiply; scales come per block.
    out_scale_.assign(static_cast<size_t>(rows_), 1.0f);
    block_params_ = static_cast<const uint8_t*>(w.block_params);
    block_cols_ = w.block_cols;
    block_f32_ = w.block_f32;
    block_offsets_ = w.block_offsets;
    const int64_t blocks = cols_ / block_cols_;
    if (w.block_super > 0) {
      // Super-block scales: the lane kernels read each block's value as f32.
      block_params_ = nullptr;
      block_f32_ = true;
      if (expand == Expand::Yes) {
        expanded_params_.resize(static_cast<size_t>(rows_ * blocks * 4 * (block_offsets_ ? 2 : 1)));
        float* out = reinterpret_cast<float*>(expanded_params_.data());
        for (int64_t n = 0; n < rows_; ++n)
          for (int64_t b = 0; b < blocks; ++b) {
            out[n * blocks + b] = w.block_scale(n, b);
            if (block_offsets_) out[(rows_ + n) * blocks + b] = w.block_offset(n, b);
          }
        block_params_ = expanded_params_.data();
      }
    }
    block_row_bytes_ = blocks * (block_f32_ ? 4 : 2);
    if (format_ == WeightFormat::Blk5 || format_ == WeightFormat::Blk6) {
      for (int i = 0; i < 1 << block_code_bits(format_); ++i)
        if (!(w.palette[i] >= -128.0f && w.palette[i] <= 127.0f) || w.palette[i] != std::nearbyint(w.palette[i]))
          fail("", "qlinear", "{} codebook entry {} is not an int8", weight_format_name(format_), w.palette[i]);
      // 5- and 6-bit codes: the lane kernels read their values as blk8 bytes.
      format_ = WeightFormat::Blk8;
      row_bytes_ = cols_;
      data_ = nullptr;
      if (expand == Expand::Yes) {
        expanded_codes_.resize(static_cast<size_t>(rows_ * cols_));
        for (int64_t n = 0; n < rows_; ++n)
          for (int64_t c = 0; c < cols_; ++c)
            expanded_codes_[static_cast<size_t>(n * cols_ + c)] = static_cast<uint8_t>(w.block_value(n, c));
        data_ = expanded_codes_.data();
      }
    }
    if (format_ == WeightFormat::Blk8) return;
    bits_ = 4;
    group_size_ = rows_;
    table_.resize(64);
    for (int j = 0; j < 64; ++j) {
      const float v = w.palette[j % 16];
      if (!(v >= -128.0f && v <= 127.0f) || v != std::nearbyint(v))
        fail("", "qlinear", "blk4 codebook entry {} is not an int8", v);
      table_[j] = static_cast<int8_t>(v);
    }
    return;
  }
  out_scale_.assign(w.scales, w.scales + rows_);
  if (!is_lut(format_)) return;
  // Palette entries (row-normalized values) as int8: per group, the largest
  // magnitude maps to 127; w[n][c] = scales[n] · (m / 127) · table entry.
  bits_ = lut_bits(format_);
  const int entries = 1 << bits_;
  group_size_ = w.group_size;
  const int64_t groups = rows_ / group_size_;
  table_.resize(static_cast<size_t>(groups * 64));
  std::vector<float> group_factor(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    const float* pal = w.palette + g * entries;
    float m = 0.0f;
    for (int i = 0; i < entries; ++i) m = std::max(m, std::fabs(pal[i]));
    group_factor[g] = m / 127.0f;
    for (int j = 0; j < 64; ++j) {
      const long q = m > 0.0f ? std::lrint(pal[j % entries] * (127.0f / m)) : 0;
      table_[g * 64 + j] = static_cast<int8_t>(std::clamp<long>(q, -127, 127));
    }
  }
  for (int64_t n = 0; n < rows_; ++n) out_scale_[n] = out_scale_[n] * group_factor[n / group_size_];
}

float QLinearWeights::block_value(const uint8_t* p, int64_t b) const {
  if (block_f32_) {
    float v;
    std::memcpy(&v, p + 4 * b, 4);
    return v;
  }
  return f16_to_f32(static_cast<uint16_t>(p[2 * b] | (p[2 * b + 1] << 8)));
}

float qlinear_finish(float* lanes16, float out_scale, const float* bias, int64_t n) {
  return qlinear_output(ref::reduce_lanes16(lanes16), out_scale, bias, n);
}

int layer_act_qmax(Isa isa, int passes) {
  return isa == Isa::Avx2 && passes == 2 ? kActQmaxNarrow : kActQmax;
}

void qlinear(Isa isa, const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
             int64_t n_end, float* y, int64_t ldy) {
  if (acts.cols != w.cols() || acts.layout != w.layout())
    fail("", "qlinear", "activations ({} columns) do not match the weight ({} columns)", acts.cols, w.cols());
  if (!w.kernel_ready()) fail("", "qlinear", "a compact weight left unexpanded runs only interleaved");
  switch (isa) {
#if TESSERA_X86
    case Isa::Amx:
    case Isa::Avx512: return qlinear_avx512(w, acts, bias, n_begin, n_end, y, ldy);
    case Isa::Avx2: return qlinear_avx2(w, acts, bias, n_begin, n_end, y, ldy);
#endif
#if TESSERA_ARM64
    case Isa::Neon: return qlinear_neon(w, acts, bias, n_begin, n_end, y, ldy);
#endif
    case Isa::Scalar: return qlinear_scalar(w, acts, bias, n_begin, n_end, y, ldy);
    default: break;
  }
  fail("options", "isa", "{} kernels were not compiled into this build", isa_name(isa));
}

void qlinear_i16gemm(Isa isa, const QLinearWeights& w, const Int16Activations& acts, const float* bias,
                     int64_t n_begin, int64_t n_end, float* y, int64_t ldy) {
  switch (isa) {
#if TESSERA_X86
    case Isa::Amx:
    case Isa::Avx512: return qlinear_i16gemm_avx512(w, acts, bias, n_begin, n_end, y, ldy);
    case Isa::Avx2: return qlinear_i16gemm_avx2(w, acts, bias, n_begin, n_end, y, ldy);
#endif
    case Isa::Scalar: return qlinear_i16gemm_scalar(w, acts, bias, n_begin, n_end, y, ldy);
    default: break;
  }
  fail("options", "isa", "no int16 GEMM for {} in this build", isa_name(isa));
}

}  // namespace tessera::kernels

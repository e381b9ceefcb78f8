#include "core/weight_format.h"

#include <bit>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "core/ggml_dequant.h"

namespace tessera {

// Sections are little-endian on disk and read in place (mmap), so the host
// must be little-endian too.
static_assert(std::endian::native == std::endian::little, "Tessera bundles assume a little-endian host");

namespace {

struct FormatInfo {
  WeightFormat format;
  std::string_view name;
  int lut_bits;
};

constexpr FormatInfo kFormats[] = {
    {WeightFormat::F32, "f32", 0},   {WeightFormat::F16, "f16", 0},   {WeightFormat::BF16, "bf16", 0},
    {WeightFormat::Int8, "int8", 0}, {WeightFormat::Lut4, "lut4", 4}, {WeightFormat::Lut3, "lut3", 3},
    {WeightFormat::Lut2, "lut2", 2}, {WeightFormat::Q4_0, "q4_0", 0}, {WeightFormat::Blk4, "blk4", 0},
    {WeightFormat::Blk5, "blk5", 0}, {WeightFormat::Blk6, "blk6", 0}, {WeightFormat::Blk8, "blk8", 0},
};

const FormatInfo& info(WeightFormat f) {
  for (const FormatInfo& i : kFormats)
    if (i.format == f) return i;
  fail("", "weight format", "unknown weight format {}", static_cast<int>(f));
}

inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Indices of one LUT row into `out` via the palette `pal`.
void decode_lut4(const uint8_t* row, int64_t cols, const float* pal, float* out) {
  for (int64_t c = 0; c < cols; c += 2) {
    const uint8_t b = row[c / 2];
    out[c] = pal[b & 0xf];
    out[c + 1] = pal[b >> 4];
  }
}

void decode_lut3(const uint8_t* row, int64_t cols, const float* pal, float* out) {
  for (int64_t c = 0; c < cols; c += 8) {
    const uint8_t* p = row + c / 8 * 3;
    const uint32_t w = p[0] | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16);
    for (int k = 0; k < 8; ++k) out[c + k] = pal[(w >> (3 * k)) & 7u];
  }
}

void decode_lut2(const uint8_t* row, int64_t cols, const float* pal, float* out) {
  for (int64_t c = 0; c < cols; c += 4) {
    const uint8_t b = row[c / 4];
    for (int k = 0; k < 4; ++k) out[c + k] = pal[(b >> (2 * k)) & 3u];
  }
}

}  // namespace

std::string_view weight_format_name(WeightFormat f) { return info(f).name; }

std::optional<WeightFormat> weight_format_from_name(std::string_view name) {
  for (const FormatInfo& i : kFormats)
    if (i.name == name) return i.format;
  return std::nullopt;
}

int lut_bits(WeightFormat f) { return info(f).lut_bits; }

bool is_lut(WeightFormat f) { return lut_bits(f) != 0; }

bool is_blocked(WeightFormat f) { return block_code_bits(f) != 0; }

int block_code_bits(WeightFormat f) {
  switch (f) {
    case WeightFormat::Blk4: return 4;
    case WeightFormat::Blk5: return 5;
    case WeightFormat::Blk6: return 6;
    case WeightFormat::Blk8: return 8;
    default: return 0;
  }
}

uint64_t block_section_bytes(int64_t rows, int64_t cols, int64_t block_cols, bool f32, bool offsets,
                             int64_t super_cols) {
  if (rows < 0 || cols < 0 || block_cols < 1 || super_cols < 0)
    fail("", "weight", "bad block shape [{}, {}] / {} / {}", rows, cols, block_cols, super_cols);
  const uint64_t r = static_cast<uint64_t>(rows), blocks = static_cast<uint64_t>((cols + block_cols - 1) / block_cols);
  if (super_cols == 0) return r * blocks * (f32 ? 4 : 2) * (offsets ? 2 : 1);
  const uint64_t supers = static_cast<uint64_t>((cols + super_cols - 1) / super_cols);
  return r * (blocks + 2 * supers) * (offsets ? 2 : 1);
}

namespace {

// Block b of row r's value in section `section` (0 scales, 1 offsets) of
// w's block section.
float block_param(const WeightView& w, int section, int64_t r, int64_t b) {
  const auto* p = static_cast<const uint8_t*>(w.block_params);
  const int64_t rows = w.rows(), blocks = w.blocks_per_row();
  if (w.block_super > 0) {
    const int64_t supers = w.supers_per_row();
    p += section * rows * (blocks + 2 * supers);
    const auto factor = static_cast<int8_t>(p[r * blocks + b]);
    const float multiplier = f16_to_f32(load_u16(p + rows * blocks + 2 * (r * supers + b * w.block_cols / w.block_super)));
    return multiplier * static_cast<float>(factor);  // exact: an f16 times an int8
  }
  const int64_t index = (section * rows + r) * blocks + b;
  if (w.block_f32) {
    float v;
    std::memcpy(&v, p + 4 * index, 4);
    return v;
  }
  return f16_to_f32(load_u16(p + 2 * index));
}

}  // namespace

float WeightView::block_scale(int64_t r, int64_t b) const { return block_param(*this, 0, r, b); }

float WeightView::block_offset(int64_t r, int64_t b) const {
  return block_offsets ? block_param(*this, 1, r, b) : 0.0f;
}

int WeightView::block_value(int64_t r, int64_t c) const {
  const int bits = block_code_bits(format);
  const uint8_t* row = static_cast<const uint8_t*>(data) + r * static_cast<int64_t>(weight_data_bytes(format, 1, cols()));
  if (bits == 8) return static_cast<int8_t>(row[c]);
  return static_cast<int>(palette[packed_code(row, bits, c)]);
}

uint64_t weight_data_bytes(WeightFormat f, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) fail("", "weight", "negative dimensions [{}, {}]", rows, cols);
  const uint64_t r = static_cast<uint64_t>(rows), c = static_cast<uint64_t>(cols);
  switch (f) {
    case WeightFormat::F32: return r * c * 4;
    case WeightFormat::F16:
    case WeightFormat::BF16: return r * c * 2;
    case WeightFormat::Int8:
    case WeightFormat::Blk8: return r * c;
    case WeightFormat::Blk4:
    case WeightFormat::Blk5:
    case WeightFormat::Blk6: return r * ((c * static_cast<uint64_t>(block_code_bits(f)) + 7) / 8);
    case WeightFormat::Lut4:
    case WeightFormat::Lut3:
    case WeightFormat::Lut2:
      // cols is a multiple of 8 for a valid LUT weight; round each row up to
      // whole bytes so that a bad shape never under-counts.
      return r * ((c * static_cast<uint64_t>(lut_bits(f)) + 7) / 8);
    case WeightFormat::Q4_0:
      return r * ((c + 31) / 32) * 18;
  }
  fail("", "weight format", "unknown weight format {}", static_cast<int>(f));
}

uint64_t scales_section_bytes(const WeightView& w) {
  if (w.shape.size() != 2) return 0;
  if (is_blocked(w.format))
    return block_section_bytes(w.rows(), w.cols(), w.block_cols, w.block_f32, w.block_offsets, w.block_super);
  return w.format == WeightFormat::Int8 || is_lut(w.format) ? static_cast<uint64_t>(w.rows()) * sizeof(float) : 0;
}

uint64_t palette_section_bytes(const WeightView& w) {
  if (is_blocked(w.format) && w.format != WeightFormat::Blk8) return (uint64_t{1} << block_code_bits(w.format)) * sizeof(float);
  if (!is_lut(w.format) || w.group_size < 1) return 0;
  return static_cast<uint64_t>(w.rows() / w.group_size) * (uint64_t{1} << lut_bits(w.format)) * sizeof(float);
}

const void* scales_section(const WeightView& w) { return is_blocked(w.format) ? w.block_params : w.scales; }

uint64_t weight_view_bytes(const WeightView& w) {
  return weight_data_bytes(w.format, w.rows(), w.cols()) + (scales_section(w) ? scales_section_bytes(w) : 0) +
         (w.palette ? palette_section_bytes(w) : 0);
}

void decode_row(const WeightView& w, int64_t r, float* out) {
  if (w.shape.empty() || w.shape.size() > 2) fail("", "decode_row", "weight has rank {}, expected 1 or 2", w.shape.size());
  const int64_t rows = w.rows(), cols = w.cols();
  if (r < 0 || r >= rows) fail("", "decode_row", "row {} out of range for {} rows", r, rows);
  switch (w.format) {
    case WeightFormat::F32:
      std::memcpy(out, static_cast<const float*>(w.data) + r * cols, static_cast<size_t>(cols) * sizeof(float));
      return;
    case WeightFormat::F16: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * cols * 2;
      for (int64_t c = 0; c < cols; ++c) out[c] = f16_to_f32(load_u16(p + 2 * c));
      return;
    }
    case WeightFormat::BF16: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * cols * 2;
      for (int64_t c = 0; c < cols; ++c) out[c] = bf16_to_f32(load_u16(p + 2 * c));
      return;
    }
    case WeightFormat::Q4_0: {
      if (cols % 32 != 0) fail("", "decode_row", "q4_0 weight with {} columns (not a multiple of 32)", cols);
      dequantize_row(DType::Q4_0, static_cast<const uint8_t*>(w.data) + r * (cols / 32) * 18, out,
                     static_cast<uint64_t>(cols));
      return;
    }
    case WeightFormat::Int8: {
      if (w.scales == nullptr) fail("", "decode_row", "int8 weight without scales");
      const int8_t* q = static_cast<const int8_t*>(w.data) + r * cols;
      const float s = w.scales[r];
      for (int64_t c = 0; c < cols; ++c) out[c] = s * static_cast<float>(q[c]);  // one rounding
      return;
    }
    case WeightFormat::Blk4:
    case WeightFormat::Blk5:
    case WeightFormat::Blk6:
    case WeightFormat::Blk8: {
      if (w.block_params == nullptr || w.block_cols < 1 || cols % w.block_cols != 0 ||
          (w.block_super > 0 && (w.block_super % w.block_cols != 0 || cols % w.block_super != 0)))
        fail("", "decode_row", "{} weight without its block section", weight_format_name(w.format));
      if (w.format != WeightFormat::Blk8 && (w.palette == nullptr || cols % 8 != 0))
        fail("", "decode_row", "{} weight without a codebook", weight_format_name(w.format));
      for (int64_t b = 0; b < cols / w.block_cols; ++b) {
        const float s = w.block_scale(r, b), o = w.block_offset(r, b);
        for (int64_t c = b * w.block_cols; c < (b + 1) * w.block_cols; ++c) {
          const float code = static_cast<float>(w.block_value(r, c));
          const float product = s * code;  // rounded to f32 first, as ggml's reference does
          out[c] = w.block_offsets ? product + o : product;
        }
      }
      return;
    }
    case WeightFormat::Lut4:
    case WeightFormat::Lut3:
    case WeightFormat::Lut2: {
      const int bits = lut_bits(w.format);
      if (w.palette == nullptr) fail("", "decode_row", "{} weight without a palette", weight_format_name(w.format));
      if (w.group_size < 1) fail("", "decode_row", "{} weight with group size {}", weight_format_name(w.format), w.group_size);
      if (cols % 8 != 0) fail("", "decode_row", "{} weight with {} columns (not a multiple of 8)", weight_format_name(w.format), cols);
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + r * (cols * bits / 8);
      const float* pal = w.palette + (r / w.group_size) * (int64_t{1} << bits);
      if (w.scales == nullptr) fail("", "decode_row", "{} weight without row scales", weight_format_name(w.format));
      if (bits == 4) decode_lut4(row, cols, pal, out);
      else if (bits == 3) decode_lut3(row, cols, pal, out);
      else decode_lut2(row, cols, pal, out);
      const float s = w.scales[r];
      for (int64_t c = 0; c < cols; ++c) out[c] = s * out[c];  // one rounding
      return;
    }
  }
  fail("", "decode_row", "unknown weight format {}", static_cast<int>(w.format));
}

}  // namespace tessera

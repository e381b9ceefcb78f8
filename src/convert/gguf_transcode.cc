#include "convert/gguf_transcode.h"

#include <cmath>
#include <cstring>

#include "convert/palettize.h"
#include "core/error.h"
#include "core/ggml_dequant.h"
#include "core/half.h"

namespace tessera {

namespace {

inline uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline float half_at(const uint8_t* p) { return f16_to_f32(le16(p)); }

constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// One ggml block split into its parts: per element a code (blk4 / blk5 /
// blk6: the index into the codebook; blk8: the int8 value), per sub-block a
// scale and an offset. x[e] = f32(scale[e / sub] · value(e)) (+ offset).
// The k-quants' scales and offsets come as their factors instead: an f16
// multiplier per block of 256 (d; −dmin for the offsets) times a small
// integer per sub-block, whose f32 product is the value.
struct BlockParts {
  int elems = 32, sub = 32;
  uint8_t code[256];
  float scale[16], offset[16];
  uint16_t scale_multiplier = 0, offset_multiplier = 0;  // f16 bits (k-quants)
  int8_t scale_factor[16], offset_factor[16];
};

struct Layout {
  WeightFormat format;
  int sub;             // elements per sub-block
  bool offsets;
  bool super;          // k-quants: scales stored as factors (BlockParts)
  int8_t codebook[64]; // blk4 / blk5 / blk6
};

Layout layout_of(DType t) {
  Layout l{WeightFormat::Blk8, 32, false, false, {}};
  auto linear = [&](WeightFormat f, int base) {
    l.format = f;
    for (int i = 0; i < 1 << block_code_bits(f); ++i) l.codebook[i] = static_cast<int8_t>(i + base);
  };
  switch (t) {
    case DType::Q4_0: linear(WeightFormat::Blk4, -8); break;
    case DType::Q4_1: linear(WeightFormat::Blk4, 0); l.offsets = true; break;
    case DType::Q4_K: linear(WeightFormat::Blk4, 0); l.offsets = l.super = true; break;
    case DType::IQ4_NL: l.format = WeightFormat::Blk4; std::memcpy(l.codebook, kIq4nlValues, 16); break;
    case DType::Q5_0: linear(WeightFormat::Blk5, -16); break;
    case DType::Q5_1: linear(WeightFormat::Blk5, 0); l.offsets = true; break;
    case DType::Q5_K: linear(WeightFormat::Blk5, 0); l.offsets = l.super = true; break;
    case DType::Q6_K: linear(WeightFormat::Blk6, -32); l.sub = 16; l.super = true; break;
    case DType::Q2_K: l.sub = 16; l.offsets = l.super = true; break;
    case DType::Q3_K: l.sub = 16; l.super = true; break;
    case DType::Q8_0: break;
    default: fail("", "transcode", "format {} does not transcode", dtype_name(t));
  }
  return l;
}

// 4-bit nibbles of the simple formats: element j low, j + 16 high.
void simple_nibbles(const uint8_t* qs, uint8_t* code) {
  for (int j = 0; j < 16; ++j) {
    code[j] = qs[j] & 0x0f;
    code[j + 16] = qs[j] >> 4;
  }
}

// Q5_0 / Q5_1 codes (0..31; Q5_0's value is the code − 16, its codebook's).
void five_bit(const uint8_t* qh_bytes, const uint8_t* qs, uint8_t* code) {
  const uint32_t qh = le32(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    code[j] = static_cast<uint8_t>((qs[j] & 0x0f) | ((qh >> j) & 1u) << 4);
    code[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
  }
}

// The k-quants' factored scales: the value is f32(d) · sf[s] for a scale
// and −(f32(dmin) · of[s]) = f32(−dmin) · of[s] for an offset (the same
// bits: IEEE products are sign-symmetric), each exact in f32, which is
// how decode_row forms them from the stored factors.
void k_scales(BlockParts& p, uint16_t d, uint16_t dmin, const int* sf, const int* of, int n) {
  p.scale_multiplier = d;
  p.offset_multiplier = static_cast<uint16_t>(dmin ^ 0x8000u);
  for (int s = 0; s < n; ++s) {
    p.scale_factor[s] = static_cast<int8_t>(sf[s]);
    if (of) p.offset_factor[s] = static_cast<int8_t>(of[s]);
  }
}

// The block layouts are core/ggml_dequant.cc's; products are formed as
// there (d · scale, dmin · min in f32) so the parts give its values exactly.
void split_block(DType t, const uint8_t* b, BlockParts& p) {
  p.elems = 32;
  switch (t) {
    case DType::Q4_0:
    case DType::IQ4_NL:
      p.scale[0] = half_at(b);
      simple_nibbles(b + 2, p.code);
      return;
    case DType::Q4_1:
      p.scale[0] = half_at(b);
      p.offset[0] = half_at(b + 2);
      simple_nibbles(b + 4, p.code);
      return;
    case DType::Q5_0:
      p.scale[0] = half_at(b);
      five_bit(b + 2, b + 6, p.code);
      return;
    case DType::Q5_1:
      p.scale[0] = half_at(b);
      p.offset[0] = half_at(b + 2);
      five_bit(b + 4, b + 8, p.code);
      return;
    case DType::Q8_0:
      p.scale[0] = half_at(b);
      std::memcpy(p.code, b + 2, 32);
      return;
    default: break;
  }
  p.elems = 256;
  switch (t) {
    case DType::Q2_K: {
      const uint8_t* scales = b;
      const uint8_t* qs = b + 16;
      int sf[16], of[16];
      for (int s = 0; s < 16; ++s) {
        sf[s] = scales[s] & 0x0f;
        of[s] = scales[s] >> 4;
      }
      k_scales(p, le16(b + 80), le16(b + 82), sf, of, 16);
      for (int e = 0; e < 256; ++e) {
        const int g = e / 128, j = (e % 128) / 32, l = e % 32;
        p.code[e] = static_cast<uint8_t>((qs[g * 32 + l] >> (2 * j)) & 3);
      }
      return;
    }
    case DType::Q3_K: {
      const uint8_t* hmask = b;
      const uint8_t* qs = b + 32;
      const uint8_t* sc = b + 96;
      int sf[16];
      for (int s = 0; s < 16; ++s) {
        const int low = (sc[s % 8] >> (4 * (s / 8))) & 0x0f;
        const int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
        sf[s] = (low | (high << 4)) - 32;
      }
      k_scales(p, le16(b + 108), 0, sf, nullptr, 16);
      for (int e = 0; e < 256; ++e) {
        const int g = e / 128, j = (e % 128) / 32, l = e % 32;
        const int low = (qs[g * 32 + l] >> (2 * j)) & 3;
        const int hbit = (hmask[l] >> (e / 32)) & 1;
        p.code[e] = static_cast<uint8_t>(static_cast<int8_t>(low - (hbit ? 0 : 4)));
      }
      return;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      int sc[8], mn[8];
      ggml_k_scale_min(b + 4, sc, mn);
      k_scales(p, le16(b), le16(b + 2), sc, mn, 8);
      const bool five = t == DType::Q5_K;
      const uint8_t* qh = b + 16;
      const uint8_t* qs = five ? b + 48 : b + 16;
      for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 32; ++l) {
          const int low = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f;
          p.code[s * 32 + l] = static_cast<uint8_t>(five ? low | (((qh[l] >> s) & 1) << 4) : low);
        }
      }
      return;
    }
    case DType::Q6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
      int sf[16];
      for (int s = 0; s < 16; ++s) sf[s] = scales[s];
      k_scales(p, le16(b + 208), 0, sf, nullptr, 16);
      for (int e = 0; e < 256; ++e) {
        const int g = e / 128, r = e % 128;
        const int low = (ql[g * 64 + r % 64] >> (4 * (r / 64))) & 0x0f;
        const int high = (qh[g * 32 + r % 32] >> (2 * (r / 32))) & 3;
        p.code[e] = static_cast<uint8_t>(low | (high << 4));  // the codebook subtracts 32
      }
      return;
    }
    default: fail("", "transcode", "format {} does not transcode", dtype_name(t));
  }
}

bool exact_in_f16(float x) { return std::isfinite(x) && f16_to_f32(f32_to_f16(x)) == x; }

}  // namespace

bool can_transcode(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::IQ4_NL:
      return true;
    default:
      return false;
  }
}

WeightFormat transcoded_format(DType t) { return layout_of(t).format; }

QuantizedWeight transcode_ggml_blocks(const TensorView& v, const std::vector<int64_t>& row_source) {
  if (!can_transcode(v.dtype)) fail(v.name, "transcode", "format {} does not transcode", dtype_name(v.dtype));
  if (v.shape.size() != 2) fail(v.name, "transcode", "expected a matrix, found rank {}", v.shape.size());
  const DTypeInfo& info = dtype_info(v.dtype);
  const int64_t rows = static_cast<int64_t>(v.shape[0]), cols = static_cast<int64_t>(v.shape[1]);
  if (cols % info.block_elems != 0)
    fail(v.name, "transcode", "{} columns are not a whole number of {}-element {} blocks", cols, info.block_elems,
         info.name);
  const auto want = dtype_bytes(v.dtype, static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols));
  if (!want || *want != v.nbytes)
    fail(v.name, "transcode", "{} bytes, a {} [{}, {}] tensor needs {}", v.nbytes, info.name, rows, cols,
         want ? *want : 0);
  if (!row_source.empty() && static_cast<int64_t>(row_source.size()) != rows)
    fail(v.name, "transcode", "row order of {} rows for a tensor of {}", row_source.size(), rows);

  const Layout l = layout_of(v.dtype);
  const int bits = block_code_bits(l.format);
  const int64_t blocks_per_row = cols / l.sub, row_bytes = static_cast<int64_t>(info.block_bytes) * (cols / info.block_elems);
  const int64_t supers_per_row = l.super ? cols / info.block_elems : 0;
  QuantizedWeight q;
  q.format = l.format;
  q.shape = {rows, cols};
  q.block_cols = l.sub;
  q.block_offsets = l.offsets;
  q.block_super = l.super ? info.block_elems : 0;
  q.data.assign(static_cast<size_t>(weight_data_bytes(l.format, rows, cols)), 0);
  if (bits < 8) q.palette.assign(l.codebook, l.codebook + (1 << bits));
  // A value per block (the simple formats), or the factors below (k-quants).
  std::vector<float> scales(l.super ? 0 : static_cast<size_t>(rows * blocks_per_row)),
      offsets(l.offsets ? scales.size() : 0);
  // Super-block scales: each section's factors [rows][blocks], then its multipliers [rows][supers].
  const int64_t section = rows * (blocks_per_row + 2 * supers_per_row);
  if (l.super) q.block_params.assign(static_cast<size_t>(section * (l.offsets ? 2 : 1)), 0);
  BlockParts parts;
  std::vector<uint8_t> row_codes(bits < 8 ? static_cast<size_t>(cols) : 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src_row = row_source.empty() ? r : row_source[static_cast<size_t>(r)];
    if (src_row < 0 || src_row >= rows) fail(v.name, "transcode", "row order names row {}", src_row);
    const uint8_t* src = v.data + src_row * row_bytes;
    uint8_t* dst = q.data.data() + r * static_cast<int64_t>(weight_data_bytes(l.format, 1, cols));
    for (int64_t c0 = 0; c0 < cols; c0 += info.block_elems, src += info.block_bytes) {
      split_block(v.dtype, src, parts);
      std::memcpy(bits < 8 ? row_codes.data() + c0 : dst + c0, parts.code, static_cast<size_t>(parts.elems));
      for (int s = 0; s < parts.elems / l.sub; ++s) {
        const int64_t b = c0 / l.sub + s;
        if (!l.super) {
          const size_t i = static_cast<size_t>(r * blocks_per_row + b);
          scales[i] = parts.scale[s];
          if (l.offsets) offsets[i] = parts.offset[s];
          continue;
        }
        uint8_t* p = q.block_params.data();
        p[r * blocks_per_row + b] = static_cast<uint8_t>(parts.scale_factor[s]);
        if (l.offsets) p[section + r * blocks_per_row + b] = static_cast<uint8_t>(parts.offset_factor[s]);
      }
      if (l.super) {
        uint8_t* m = q.block_params.data() + rows * blocks_per_row + 2 * (r * supers_per_row + c0 / info.block_elems);
        std::memcpy(m, &parts.scale_multiplier, 2);
        if (l.offsets) std::memcpy(m + section, &parts.offset_multiplier, 2);
      }
    }
    if (bits < 8) pack_indices(row_codes.data(), cols, bits, dst);  // lut's bit strings (core/weight_format.h)
  }
  if (l.super) return q;
  bool f16 = true;
  for (float x : scales) f16 = f16 && exact_in_f16(x);
  for (float x : offsets) f16 = f16 && exact_in_f16(x);
  q.block_f32 = !f16;
  const size_t n = scales.size() + offsets.size();
  q.block_params.resize(n * (f16 ? 2 : 4));
  auto put = [&](size_t i, float x) {
    if (f16) {
      const uint16_t h = f32_to_f16(x);
      std::memcpy(q.block_params.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(q.block_params.data() + 4 * i, &x, 4);
    }
  };
  for (size_t i = 0; i < scales.size(); ++i) put(i, scales[i]);
  for (size_t i = 0; i < offsets.size(); ++i) put(scales.size() + i, offsets[i]);
  return q;
}

}  // namespace tessera

// How a weight tensor is stored in a bundle, and a view of one in memory.
//
// A weight is a matrix [rows, cols] (a linear layer: [out_features,
// in_features]; an embedding: [vocab, hidden]) or a vector [cols] (norms,
// biases: always f32). Its bytes live in up to three sections:
//
//   f32, f16, bf16  data:    rows × cols values, row-major, little-endian
//   int8            data:    rows × cols int8, row-major
//                   scales:  rows f32: w[r][c] = scales[r] · q[r][c]
//                            (symmetric per output row: scale = max|w_r| / 127)
//   lut4/lut3/lut2  data:    per row, cols indices of `bits` bits, packed
//                            little-endian: index c occupies bits
//                            [c·bits, (c+1)·bits) of the row's bit string,
//                            byte b holding bits [8b, 8b+8) (lut4: two per
//                            byte, low nibble first; lut2: four per byte;
//                            lut3: eight indices in three bytes). A row takes
//                            cols·bits/8 bytes (cols is a multiple of 8).
//                   scales:  rows f32 (each row's largest magnitude)
//                   palette: (rows / group_size) × 2^bits f32 entries, found
//                            on the rows divided by their scales: rows
//                            g·group_size .. (g+1)·group_size-1 share palette g
//                            (rows is a multiple of group_size);
//                            w[r][c] = scales[r] · palette[r / group_size][index(r, c)].
//
//   blk4            data:    per row, cols 4-bit codes packed as lut4's indices
//                            (two per byte, low nibble first).
//                   palette: 16 f32 entries, each an integer in [-128, 127]:
//                            the tensor's codebook (Q4_0: q - 8; Q4_1 / Q4_K:
//                            q; IQ4_NL: its non-linear levels).
//                   block:   per row and block of block_cols (32) columns a
//                            scale s_b and, with offsets, an offset o_b:
//                            w[r][c] = s_b · palette[code(r, c)] (+ o_b),
//                            the product rounded to f32, then the sum.
//   blk5, blk6      data:    per row, cols codes of 5 / 6 bits packed as
//                            lut3's indices are (code c at bits [c·bits,
//                            (c+1)·bits) of the row's bit string).
//                   palette: 2^bits f32 entries, each an integer in
//                            [-128, 127] (Q5_0: q - 16; Q5_1 / Q5_K: q;
//                            Q6_K: q - 32).
//                   block:   as blk4 with block_cols 16 or 32.
//   blk8            data:    rows × cols int8 codes, row-major.
//                   block:   as blk4 with block_cols 16 or 32:
//                            w[r][c] = s_b · code(r, c) (+ o_b).
//     The block section holds every row's scales, [rows][cols / block_cols],
//     then (with offsets) every row's offsets, in f16 (block_f32 false) or
//     f32. With super-blocks (block_super > 0: the k-quants' 256 columns),
//     each of the two instead holds [rows][blocks] int8 factors, then
//     [rows][cols / block_super] f16 multipliers, and a block's value is
//     multiplier · factor, the product formed in f32 (exact: 11 × 8
//     significant bits). blk4 ... blk8 carry a quantized GGUF's values
//     exactly: every ggml block format Tessera reads (Q4_0 ... Q6_K,
//     IQ4_NL) is, per block of 16 or 32 columns, an integer code times a
//     scale plus an offset, each rounded to f32 as the ggml reference does
//     (convert/gguf_transcode.h), and the k-quants' scales are an f16 times
//     a small integer, stored so.
//
//   q4_0            data:    llama.cpp's Q4_0 blocks along each row: per 32
//                            values an f16 scale d and 16 bytes of 4-bit q
//                            (w = d · (q - 8)); cols is a multiple of 32.
//                            Kept to compare palettes with llama.cpp's format
//                            on equal terms (tessera quality).
//
// Palettes are found by k-means (convert/palettize.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

enum class WeightFormat { F32, F16, BF16, Int8, Lut4, Lut3, Lut2, Q4_0, Blk4, Blk5, Blk6, Blk8 };

std::string_view weight_format_name(WeightFormat f);  // "f32", "f16", "bf16", "int8", "lut4", "lut3", "lut2", "q4_0", "blk4" ... "blk8"
std::optional<WeightFormat> weight_format_from_name(std::string_view name);
int lut_bits(WeightFormat f);                        // 4 / 3 / 2; 0 for non-LUT formats
bool is_lut(WeightFormat f);
bool is_blocked(WeightFormat f);                     // blk4, blk5, blk6, blk8
int block_code_bits(WeightFormat f);                 // 4 / 5 / 6 / 8 for blk4 ... blk8; 0 otherwise
// Bytes of the block section of a rows × cols blocked weight (super_cols 0:
// one value per block; else factors and super-block multipliers).
uint64_t block_section_bytes(int64_t rows, int64_t cols, int64_t block_cols, bool f32, bool offsets,
                             int64_t super_cols = 0);
// Code c of a row packed as a bit string of `bits`-bit codes (lut*, blk4-6).
inline int packed_code(const uint8_t* row, int bits, int64_t c) {
  const int64_t bit = c * bits, byte = bit / 8;
  const unsigned word = row[byte] | (bit % 8 + bits > 8 ? static_cast<unsigned>(row[byte + 1]) << 8 : 0u);
  return static_cast<int>((word >> (bit % 8)) & ((1u << bits) - 1));
}
// Bytes of the data section of a rows × cols matrix in format f.
uint64_t weight_data_bytes(WeightFormat f, int64_t rows, int64_t cols);

// A weight in memory (mmap'd bundle or an owning store); pointers stay valid
// as long as their owner.
struct WeightView {
  WeightFormat format = WeightFormat::F32;
  std::vector<int64_t> shape;     // [rows, cols] or [cols]
  const void* data = nullptr;
  const float* scales = nullptr;  // int8, lut*: one per row
  const float* palette = nullptr; // lut*
  int64_t group_size = 0;         // lut*: rows per palette
  // blk4 ... blk8: the block section (layout above), its block width and
  // storage; palette holds blk4 / blk5 / blk6's codebook entries.
  const void* block_params = nullptr;
  int64_t block_cols = 0;
  bool block_f32 = false;
  bool block_offsets = false;
  int64_t block_super = 0;  // columns per super-block (0: none)

  int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  int64_t cols() const { return shape.back(); }
  int64_t blocks_per_row() const { return block_cols > 0 ? cols() / block_cols : 0; }
  int64_t supers_per_row() const { return block_super > 0 ? cols() / block_super : 0; }
  // blk4 ... blk8: block b of row r's scale and offset (0 without offsets).
  float block_scale(int64_t r, int64_t b) const;
  float block_offset(int64_t r, int64_t b) const;
  // A blocked weight stored more compactly than the lane kernels read
  // (blk5 / blk6 codes, or super-block scales): kernels::QLinearWeights
  // expands it (or the interleaved layout reads it directly).
  bool compact_blocks() const {
    return format == WeightFormat::Blk5 || format == WeightFormat::Blk6 || (is_blocked(format) && block_super > 0);
  }
  // The value code(r, c) stands for (blk4-6: its codebook entry; blk8: the byte).
  int block_value(int64_t r, int64_t c) const;
};

// Bytes of every section of w (data, scales, palettes): what reading it all takes.
uint64_t weight_view_bytes(const WeightView& w);

// The bytes of a weight's second and third sections as a bundle stores them
// (bundle/manifest.h): "scales" (int8, lut*: rows f32; blk4 / blk8: the
// block section) and "palette" (lut*: the palettes; blk4: the codebook).
// Only the shape, format, group_size and block fields of w are read.
uint64_t scales_section_bytes(const WeightView& w);
uint64_t palette_section_bytes(const WeightView& w);
// The first byte of each (null when the format has none).
const void* scales_section(const WeightView& w);

// The f32 values of row r (exact for f32/f16/bf16/lut; int8: scale · q
// rounded once to f32). The reference every format kernel is tested against.
void decode_row(const WeightView& w, int64_t r, float* out);

}  // namespace tessera

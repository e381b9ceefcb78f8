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

enum class WeightFormat { F32, F16, BF16, Int8, Lut4, Lut3, Lut2, Q4_0 };

std::string_view weight_format_name(WeightFormat f);  // "f32", "f16", "bf16", "int8", "lut4", "lut3", "lut2", "q4_0"
std::optional<WeightFormat> weight_format_from_name(std::string_view name);
int lut_bits(WeightFormat f);                        // 4 / 3 / 2; 0 for non-LUT formats
bool is_lut(WeightFormat f);
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

  int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  int64_t cols() const { return shape.back(); }
};

// Bytes of every section of w (data, scales, palettes): what reading it all takes.
uint64_t weight_view_bytes(const WeightView& w);

// The f32 values of row r (exact for f32/f16/bf16/lut; int8: scale · q
// rounded once to f32). The reference every format kernel is tested against.
void decode_row(const WeightView& w, int64_t r, float* out);

}  // namespace tessera

// Quantizes one f32 weight into a bundle storage format
// (core/weight_format.h):
//   f32        copied;
//   f16, bf16  rounded to nearest, ties to even (core/half.h); a finite value
//              that would round to infinity (|w| ≥ 65520 for f16) is an error;
//   int8       symmetric per row: scale = max|w_r| / 127 (in f32),
//              q = round-half-away-from-zero(w / scale) (quotient in double)
//              clamped to [-127, 127]; a row whose scale is 0 (all zeros, or
//              so tiny that max|w_r| / 127 underflows) gets scale 0 and q = 0;
//   lut4/3/2   rows divided by their largest magnitude (kept as the row
//              scale), then k-means palettes per group of group_size rows
//              (convert/palettize.h); with input_moments, the k-means is
//              weighted by scale_r² · E[x_c²] (activation-aware palettes).
// Throws tessera::Error for: a shape that is not [cols] or [rows, cols] with
// positive sizes (int8 and lut* need [rows, cols]); lut* with cols not a
// multiple of 8, group_size < 1, or rows not a multiple of group_size (the
// caller picks another group size; nothing is adjusted silently); and a NaN
// or infinity in the input (naming the first one's index); input_moments of
// the wrong length or with a negative or non-finite value.
#pragma once

#include <cstdint>
#include <vector>

#include "core/weight_format.h"

namespace tessera {

struct QuantizeOptions {
  int64_t group_size = 16;     // lut*: rows per palette
  uint64_t seed = 0;           // lut*: k-means++ seed
  int kmeans_iterations = 25;  // lut*: Lloyd iterations
  int threads = 1;             // lut*: worker threads (< 1: all hardware threads); never changes the result
  bool int8_palette = true;    // lut*: palettes on the integer kernels' int8 grid (PalettizeOptions::int8_grid)
  // lut*: optional E[x_c²] per input column c of the layer (cols values,
  // convert/calibration.h). Given, element (r, c) weighs scale_r² · E[x_c²]
  // in the k-means, so the palettes minimize the expected squared error of
  // the layer's output rather than of its weights. Values below 1e-6 of the
  // mean are raised to that floor (a column no calibration token used still
  // counts a little). Null or all zero: plain k-means on the normalized rows.
  const std::vector<float>* input_moments = nullptr;
};

struct QuantizedWeight {
  WeightFormat format = WeightFormat::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;    // the data section, as weight_format.h lays it out
  std::vector<float> scales;    // int8, lut*: one per row
  std::vector<float> palette;   // lut*: (rows / group_size) × 2^bits
  int64_t group_size = 0;       // lut*: rows per palette; 0 otherwise
  // blk4 ... blk8 (convert/gguf_transcode.h): the block section's bytes and
  // fields (core/weight_format.h); palette then holds blk4-6's codebook.
  std::vector<uint8_t> block_params;
  int64_t block_cols = 0;
  bool block_f32 = false, block_offsets = false;
  int64_t block_super = 0;
  double mse = 0;               // mean squared error of the decoded weight against the input

  // Borrows this object's buffers: valid while it lives and is not modified.
  WeightView view() const;
};

QuantizedWeight quantize_weight(const float* w, std::vector<int64_t> shape, WeightFormat format,
                                const QuantizeOptions& o);

}  // namespace tessera

// Palettization (lut4 / lut3 / lut2 weights, core/weight_format.h): every
// group of `group_size` consecutive rows shares one palette of K = 2^bits f32
// values found by 1-D k-means over all of the group's rows × cols values, and
// each weight is stored as the bits-wide index of its palette entry.
//
// k-means, per group g:
//   * values are sorted once (by value, then position): every cluster of a
//     1-D nearest-centroid assignment is a contiguous run of the sorted
//     values, so an assignment step is K-1 binary searches and an update step
//     K differences of prefix sums (in double);
//   * initialisation: k-means++ (first centre uniform, each next one drawn
//     with probability ∝ squared distance to the nearest centre so far) from
//     std::mt19937_64 seeded with palette_group_seed(seed, g); random numbers
//     are taken from the raw engine output (no std:: distributions), so the
//     result does not depend on the standard library;
//   * Lloyd iterations: each value goes to its nearest centroid, ties to the
//     lower index; each centroid becomes the mean of its values (rounded to
//     f32); an empty cluster is re-seeded at the value farthest from its
//     centroid; stops after `kmeans_iterations` updates or as soon as an
//     assignment repeats;
//   * a group with at most K distinct values gets exactly those values as its
//     palette (error 0), padded with copies of the largest one.
// Palettes are stored in ascending order. The result depends only on the
// input and seed — not on `threads` (groups are independent and each is
// computed by one thread).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct PalettizeOptions {
  int bits = 4;                // 2, 3 or 4
  int64_t group_size = 16;     // rows per palette; must divide rows
  uint64_t seed = 0;
  int kmeans_iterations = 25;  // Lloyd iterations after k-means++ (0: k-means++ only)
  int threads = 1;             // worker threads over groups; < 1: all hardware threads
  // Snap each group's palette to the int8 grid the integer kernels use
  // (kernels/qlinear.h): entry = q · (m / 127) with q ∈ [-127, 127] and m the
  // group's largest |entry|, then reassign every value to its nearest snapped
  // entry. The kernels then compute with exactly the stored palette.
  bool int8_grid = false;
  // Optional importance weights (both or neither; positive, finite): the
  // k-means minimizes Σ row_weights[r] · column_weights[c] · (w[r][c] −
  // palette entry)² instead of the plain squared error. With column weights
  // E[x_c²] of the layer's input and row weights the rows' scale², that is
  // the expected squared error of the layer's output under a diagonal model of
  // the inputs (activation-aware palettes, convert/calibration.h). Assignment
  // stays nearest-entry (a weight does not change which scalar entry is
  // nearest); only the centroids move to weighted means.
  const float* row_weights = nullptr;     // rows values
  const float* column_weights = nullptr;  // cols values
};

struct Palettized {
  std::vector<uint8_t> data;   // rows × cols indices, packed as core/weight_format.h says
  std::vector<float> palette;  // (rows / group_size) × 2^bits, each group's ascending
  double mse = 0;              // mean squared error of the decoded weight against the input
};

// Palettizes the row-major rows × cols matrix w. Throws tessera::Error for
// bits not in {2, 3, 4}, rows or cols < 1, cols not a multiple of 8, group_size
// < 1 or not dividing rows, and non-finite values (naming the first).
Palettized palettize(const float* w, int64_t rows, int64_t cols, const PalettizeOptions& o);

// One group's clustering, exposed for tests and tools.
struct KMeansResult {
  std::vector<float> centroids;  // k entries, ascending
  std::vector<uint8_t> indices;  // n entries: centroid of each input value
  double sse = 0;                // sum of squared errors (double)
  int iterations = 0;            // Lloyd updates performed
  int reseeds = 0;               // empty clusters re-seeded along the way
};
// n ≥ 1 finite values, 1 ≤ k ≤ 256. weights: null (all 1) or n positive
// finite weights; the centroids are then weighted means and k-means++ draws
// with probability ∝ weight · squared distance. Unit weights give exactly
// the unweighted result.
KMeansResult kmeans_1d(const float* values, const float* weights, int64_t n, int k, uint64_t seed, int iterations);

// PalettizeOptions::int8_grid applied to one group's result (values: the
// group's n inputs); updates centroids, indices and sse.
void snap_to_int8_grid(const float* values, int64_t n, KMeansResult& r);

// The RNG seed of group g: seed + 0x9E3779B97F4A7C15 · (g + 1) (mod 2^64).
uint64_t palette_group_seed(uint64_t seed, int64_t g);

// Packs n `bits`-wide indices little-endian (index i at bits [i·bits,
// (i+1)·bits)) into ceil(n·bits / 8) bytes at out (overwritten).
void pack_indices(const uint8_t* idx, int64_t n, int bits, uint8_t* out);

}  // namespace tessera

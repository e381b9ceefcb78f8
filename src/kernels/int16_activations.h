// Activations quantized to int16 for the AVX2 prefill GEMM
// (kernels/qlinear_i16gemm.h).
//
// Each row of `cols` f32 values (cols a multiple of 64, as every qlinear
// weight has) is cut into blocks of kI16Block = 128 columns, the last one
// possibly 64. A block gets one scale s = max|x| / 32767 and
//   q = round-to-nearest-even(x · (32767 / max|x|)) ∈ [-32767, 32767]
// (an all-zero block: s = 0, q = 0). The step is max|x| / 32767: 256 times
// finer than one int8 pass of the decode kernels, so a 128-column block
// with an outlier channel 100x its neighbours still gives them about 8
// significant bits, while the dot product, dominated by the outlier, keeps
// about 15 (the measured agreement with the reference kernels is in
// docs/BENCHMARKING.md). Blocks this long let the GEMM add a whole block of
// exact int32 products (vpmaddwd) before its one f32 multiply-add per lane.
//
// Non-finite input: a block holding a NaN or an infinity gets q = 0 and a
// non-finite scale, so the outputs that read it become NaN or infinite, as
// the f32 linear's would. A block whose 32767 / max overflows (max below
// about 1e-34, only subnormal-sized values) is treated as all zero.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_vector.h"
#include "kernels/cpu_isa.h"

namespace tessera::kernels {

constexpr int64_t kI16Block = 128;

struct Int16Activations {
  int64_t rows = 0, cols = 0;
  int64_t blocks = 0;         // per row: ceil(cols / kI16Block)
  AlignedVector<int16_t> q;   // [rows][cols], column order
  std::vector<float> scale;   // [rows][blocks]

  const int16_t* q_row(int64_t t) const { return q.data() + t * cols; }
  const float* scale_row(int64_t t) const { return scale.data() + t * blocks; }
};

// Sizes `out` for x [rows][cols] (buffers reused when large enough).
void prepare_int16_activations(int64_t rows, int64_t cols, Int16Activations& out);
// Quantizes rows [t_begin, t_end) of x [out.rows][out.cols] into `out`. Rows
// are independent, so any split over threads gives the same bits; `isa`
// picks the implementation only (every level gives the scalar one's bits).
void quantize_int16_rows(Isa isa, const float* x, int64_t t_begin, int64_t t_end, Int16Activations& out);

// One row, the unit both implementations share: q (cols values) and the
// row's block scales. The AVX2 one returns false for a row it leaves to the
// scalar one (outputs then unspecified): a block with a non-finite value or
// a max too small for 32767 / max.
void quantize_int16_row_scalar(const float* xr, int64_t cols, int16_t* qr, float* sr);
bool quantize_int16_row_avx2(const float* xr, int64_t cols, int16_t* qr, float* sr);

// The block scales of rows [0, full) of `a`, full = a.rows rounded down to a
// multiple of `tile`, in the order a `tile`-token GEMM tile reads them, block
// by block: out[(k · a.blocks + b) · tile + t] = scale of row k · tile + t,
// block b (tile k's scales start at out + k · tile · a.blocks). Returns full.
int64_t gather_tile_scales(const Int16Activations& a, int tile, std::vector<float>& out);

}  // namespace tessera::kernels

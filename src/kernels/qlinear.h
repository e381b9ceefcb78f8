// Linear layers on stored low-bit weights with int8 activations: the decode
// (GEMV) and prefill kernels of lut4, lut3, lut2 and int8 bundles.
//
//   y[t, n] = out_scale[n] · Σ_chunks Σ_lanes Σ_passes (act scale of the lane's block in that pass)
//                            · (exact int32 Σ w_q[n, c] · a_q[pass][t, c] over the lane)
//             (+ bias[n])
//
// w_q are int8 weight values: an int8 weight's stored bytes, or a lut
// weight's palette entries re-expressed as int8 (per palette group: entries
// scaled so the largest magnitude is 127; the group factor goes into
// out_scale). a_q and the lane structure are described in
// kernels/int8_activations.h (one or two passes: x and its rounding residual).
// Each of the 16 lanes keeps an f32 accumulator updated per chunk and pass,
// in pass order, with one fused multiply-add of (act scale, lane sum);
// the 16 lanes are then added as reference::reduce_lanes16 does, and the sum
// is multiplied by out_scale[n] (then the bias is added).
//
// blk4 / blk8 weights (a quantized GGUF's own values, core/weight_format.h)
// have a scale (and offset) per block of 16 or 32 columns; a lane never
// spans two blocks. Their lanes take, per chunk, with q_sum the lane's
// Σ a_q of a pass (−bias16 / 128):
//   t    = s_act[0] · Σ w_q·a_q[0]   (then t = fma(s_act[1], Σ w_q·a_q[1], t))
//   lane = fma(block scale, t, lane)
//   u    = s_act[0] · q_sum[0]       (then u = fma(s_act[1], q_sum[1], u))
//   lane = fma(block offset, u, lane)            (formats with offsets)
// and out_scale is 1. w_q are the codes (blk4: the codebook entry).
//
// Integer sums are exact and every f32 operation is specified, so the scalar
// twin and the AVX2, AVX-512 and NEON kernels give identical bits, for any row
// split across threads and any number of tokens per call. Compared with the
// f32 reference on the same bundle this differs only by the int8 rounding of
// the activations (the residual's, with two passes) and of the palette
// entries (measured in docs/BENCHMARKING.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/aligned_vector.h"
#include "core/weight_format.h"
#include "kernels/cpu_isa.h"
#include "kernels/int8_activations.h"

namespace tessera::kernels {

// A stored weight prepared for the kernels: points into the bundle's bytes;
// owns only small per-group / per-row tables (no second copy of the weights),
// except for compactly stored blocked weights (WeightView::compact_blocks():
// blk5 / blk6 codes, super-block scales), which the lane kernels read
// expanded: their codes as blk8 bytes and their block values as f32.
class QLinearWeights {
 public:
  // Whether a kernel exists for this weight (int8, lut4, lut3, lut2, blk4
  // ... blk8; cols a multiple of 64), at every level.
  static bool supported(const WeightView& w);
  // Expand::No leaves a compact weight unexpanded: its shape, values and
  // block values read through the view (value(), block_scale(): the head's
  // refinement precomputes, tests), but no lane kernel may run on it
  // (kernel_ready() false): for a weight that runs interleaved
  // (kernels/interleaved_linear.h), which reads the view itself.
  enum class Expand { Yes, No };
  explicit QLinearWeights(const WeightView& w, Expand expand = Expand::Yes);  // Error if !supported(w)
  bool kernel_ready() const { return data_ != nullptr && (!blocked() || block_params_ != nullptr); }

  WeightFormat format() const { return format_; }
  // lut4 reads its activations as even/odd column pairs (the two nibbles of
  // a byte), lut3 and lut2 as block halves (their kernels unpack the first
  // and the second 4 columns of 16 blocks into two vectors,
  // kernels/lut_unpack_*.h), int8 in column order.
  ActLayout layout() const {
    switch (format_) {
      case WeightFormat::Int8:
      case WeightFormat::Blk8: return ActLayout::Natural;
      case WeightFormat::Lut4:
      case WeightFormat::Blk4: return ActLayout::Lut4Pairs;
      default: return ActLayout::BlockHalves;
    }
  }
  int bits() const { return bits_; }  // 8 (int8), 4, 3, 2
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const uint8_t* row(int64_t n) const { return data_ + n * row_bytes_; }
  int64_t row_bytes() const { return row_bytes_; }
  float out_scale(int64_t n) const { return out_scale_[n]; }
  const float* out_scale_data() const { return out_scale_.data(); }
  // lut: the 2^bits int8 palette entries of row n's group, repeated to fill
  // 64 bytes (entry i at every byte j with j mod 2^bits = i), so a byte
  // lookup (vpermb: 6 index bits; vpshufb: 4) needs no mask above the index.
  const int8_t* table(int64_t n) const { return table_.data() + (n / group_size_) * 64; }
  int64_t group_size() const { return group_size_; }
  // The palette index of column c of row n (lut formats): bits [c·bits,
  // (c+1)·bits) of the row's little-endian bit string (core/weight_format.h).
  int index(int64_t n, int64_t c) const { return packed_code(row(n), bits_, c); }
  // The int8 weight value w_q[n][c] the kernels multiply (scalar twins, tests).
  int8_t value(int64_t n, int64_t c) const {
    if (data_ == nullptr) return static_cast<int8_t>(view_.block_value(n, c));
    if (bits_ == 8) return static_cast<int8_t>(row(n)[c]);
    return table(n)[index(n, c)];
  }

  // blk4 / blk8: columns per block, scale storage, offsets; the first
  // scale / offset of row n in the storage type (f16 bits or f32).
  bool blocked() const { return block_cols_ > 0; }
  int64_t block_cols() const { return block_cols_; }
  bool block_f32() const { return block_f32_; }
  bool block_offsets() const { return block_offsets_; }
  const uint8_t* block_scales(int64_t n) const { return block_params_ + n * block_row_bytes_; }
  const uint8_t* block_offsets(int64_t n) const { return block_params_ + (rows_ + n) * block_row_bytes_; }
  // The stored bytes this view reads: the codes, and the block section (blocked formats; else empty).
  std::pair<const uint8_t*, int64_t> data_bytes() const { return {data_, rows_ * row_bytes_}; }
  std::pair<const uint8_t*, int64_t> block_section_bytes() const {
    return {block_params_, block_params_ ? rows_ * block_row_bytes_ * (block_offsets_ ? 2 : 1) : 0};
  }
  // Block b of row n's scale / offset as f32 (scalar twin).
  float block_scale(int64_t n, int64_t b) const {
    return block_params_ ? block_value(block_scales(n), b) : view_.block_scale(n, b);
  }
  float block_offset(int64_t n, int64_t b) const {
    return block_params_ ? block_value(block_offsets(n), b) : view_.block_offset(n, b);
  }

 private:
  WeightFormat format_;
  WeightView view_;  // what it was made from (compact weights read through it unexpanded)
  AlignedVector<uint8_t> expanded_codes_, expanded_params_;
  const uint8_t* data_;
  int64_t rows_, cols_, row_bytes_, group_size_ = 1;
  int bits_ = 8;
  std::vector<float> out_scale_;
  std::vector<int8_t> table_;
  const uint8_t* block_params_ = nullptr;
  int64_t block_cols_ = 0, block_row_bytes_ = 0;
  bool block_f32_ = false, block_offsets_ = false;
  float block_value(const uint8_t* p, int64_t b) const;
};

// Tokens per tile in the prefill loops of the vector kernels.
constexpr int64_t kTokenTile = 16;

// The walk the vector kernels share. Prefill runs in tiles of kTokenTile
// tokens, whose quantized activations (about 1.3 KB per token and pass per
// 1000 columns) stay in L1 while every row block of the range passes over
// them; the weights are re-read from L2 once per tile. Within a tile, rows
// go in blocks of R, the rest in blocks of R/2, R/4, ... 1 (R a power of
// two), each block over every token:
// block(std::integral_constant<int, rows in the block>{}, t, n).
template <int R, class Block>
void row_blocks_of(int64_t t0, int64_t t1, int64_t& n, int64_t n_end, Block& block) {
  for (; n + R <= n_end; n += R)
    for (int64_t t = t0; t < t1; ++t) block(std::integral_constant<int, R>{}, t, n);
  if constexpr (R > 1) row_blocks_of<R / 2>(t0, t1, n, n_end, block);
}

template <int R, class Block>
void for_each_row_block(int64_t tokens, int64_t n_begin, int64_t n_end, Block&& block) {
  static_assert(R > 0 && (R & (R - 1)) == 0, "row blocks are a power of two");
  for (int64_t t0 = 0; t0 < tokens; t0 += kTokenTile) {
    const int64_t t1 = std::min(tokens, t0 + kTokenTile);
    int64_t n = n_begin;
    row_blocks_of<R>(t0, t1, n, n_end, block);
  }
}

// f(std::integral_constant<int, acts.passes>{}): the kernels are compiled
// per pass count.
template <class F>
void with_act_passes(const Int8Activations& acts, F&& f) {
  if (acts.passes == 2) f(std::integral_constant<int, 2>{});
  else f(std::integral_constant<int, 1>{});
}

// f(Blocks<K, F, O>{}) for a blocked weight w, the vector kernels'
// per-ISA block policies: K = KFour when w's blocks come four to a
// 64-column vector (blk4's 32-column blocks, as lut4 pairs its nibbles, or
// blk8's 16-column ones), else KTwo (blk8's 32-column blocks); F: f32
// scales (else f16); O: offsets.
template <template <int, bool, bool> class Blocks, int KFour, int KTwo, class Fn>
void with_blocks(const QLinearWeights& w, Fn&& f) {
  auto storage = [&](auto k) {
    constexpr int K = decltype(k)::value;
    if (w.block_f32()) {
      if (w.block_offsets()) f(Blocks<K, true, true>{});
      else f(Blocks<K, true, false>{});
    } else {
      if (w.block_offsets()) f(Blocks<K, false, true>{});
      else f(Blocks<K, false, false>{});
    }
  };
  if (w.block_cols() == 16 || w.bits() == 4) storage(std::integral_constant<int, KFour>{});
  else storage(std::integral_constant<int, KTwo>{});
}

// The activation range (qmax) of the layers' linears at `isa` with `passes`
// passes: kActQmaxNarrow for two passes at Isa::Avx2, whose kernel then
// takes the weights unsigned and skips the signed dot's sign fix-ups
// (kernels/int8_activations.h; about 13 significant bits in two passes
// instead of 15, measured in docs/BENCHMARKING.md); kActQmax elsewhere:
// AVX-512's vpdpbusd takes the weights unsigned for free, and one pass needs
// all 8 bits. Every level's kernel is exact for either range, so a level's
// bits depend only on the range it is given.
int layer_act_qmax(Isa isa, int passes);

// y[t * ldy + n] for t < acts.rows and n in [n_begin, n_end). acts must be
// quantized with w.layout() and acts.cols == w.cols().
void qlinear(Isa isa, const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
             int64_t n_end, float* y, int64_t ldy);

// The per-ISA kernels (same contract); Scalar is the twin the others are tested against.
void qlinear_scalar(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                    int64_t n_end, float* y, int64_t ldy);
void qlinear_avx2(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                  int64_t n_end, float* y, int64_t ldy);
void qlinear_avx512(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                    int64_t n_end, float* y, int64_t ldy);
void qlinear_neon(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                  int64_t n_end, float* y, int64_t ldy);  // AArch64 builds only

// The last step shared by every kernel: the sum of the 16 lane accumulators
// (added as ref::reduce_lanes16 does) times out_scale, plus the bias.
inline float qlinear_output(float lane_sum, float out_scale, const float* bias, int64_t n) {
  const float s = lane_sum * out_scale;
  return bias ? s + bias[n] : s;
}
float qlinear_finish(float* lanes16, float out_scale, const float* bias, int64_t n);  // reduce, then qlinear_output

}  // namespace tessera::kernels

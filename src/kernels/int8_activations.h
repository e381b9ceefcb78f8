// Activations quantized to int8 for the integer-dot linear kernels
// (kernels/qlinear.h).
//
// Each row of `cols` f32 values is cut into blocks of kActBlock = 8 columns;
// a block gets one scale s = max|x| / Q and q = round-to-nearest-even(x ·
// Q / max|x|) ∈ [-Q, Q] (an all-zero block: s = 0, q = 0), Q = qmax: 127,
// or 63 for the narrow range below. Blocks this
// small keep an outlier channel from flattening its neighbours (with 64-column
// blocks the SmolLM2 lut4 logits moved 10x further from the f32 kernels,
// docs/REJECTED_APPROACHES.md), and cost the lane kernels nothing: the scale is
// applied per int32 lane, and a lane never spans two blocks. The fast
// level's interleaved layers take kActBlockCoarse = 32 columns per block
// instead (Natural layout only), so that a 32-column weight block is one
// int32 dot (kernels/interleaved_linear.h; quality in docs/QUANTIZATION.md).
// Rows are zero-padded to a
// whole number of chunks, and the bytes of a chunk are laid out for the
// weight format the kernel reads:
//
//   Natural     (int8 weights) chunk = 64 columns, byte i = column i.
//   Lut4Pairs   (lut4 weights) chunk = 128 columns: bytes 0..63 hold the even
//               columns 0, 2, ..., 126 and bytes 64..127 the odd ones,
//               matching the low and high nibbles of 64 bytes of packed
//               4-bit indices.
//   BlockHalves (lut3 / lut2 weights) chunk = 128 columns: bytes 4j..4j+3
//               hold columns 8j..8j+3 (the first half of block j) and bytes
//               64+4j..64+4j+3 columns 8j+4..8j+7 (its second half), matching
//               the two vectors the lut3 / lut2 kernels unpack per 128 columns.
//
// The kernels sum products in 16 int32 lanes per chunk: lane j adds the 4
// consecutive bytes 4j..4j+3 of each 64-byte vector it multiplies, i.e.
//   Natural:     columns 4j .. 4j+3 of the chunk,
//   Lut4Pairs:   columns 8j .. 8j+7 of the chunk (4 even from the low nibbles,
//                4 odd from the high ones),
//   BlockHalves: columns 8j .. 8j+7 of the chunk (one half from each vector),
// so every lane lies inside one block, and the two 128-column layouts pay one
// scale multiply per block instead of two. Per chunk and lane we store
//   scale16[j]  the scale of lane j's block (0 past the last block), and
//   bias16[j]   -128 · Σ q over lane j's columns, which an unsigned×signed
//               dot product (VNNI vpdpbusd) uses to undo a +128 bias on the
//               weight bytes, giving the exact signed sum.
//
// One or two passes: pass 0 quantizes x as above; pass 1 (when asked for)
// quantizes its rounding residual r = x − s·q (f32, per column, s the
// block's scale) the same way. The kernels multiply each looked-up weight
// vector with every pass, so two passes carry about 15 significant bits
// instead of 8 for one extra integer dot product per weight vector. The
// runtime uses two for every layer's linears (one if loaded with
// LoadOptions::act_passes = 1, an opt-in for CPUs where the integer dot
// bounds decode); the output head runs one and
// recomputes with two only the logits that could be the top one
// (kernels/qlinear_refine.h; measured trade-off in docs/BENCHMARKING.md).
//
// The narrow range (qmax = 63, two passes: about 13 significant bits
// instead of 15) is what the AVX2 kernels take for the layers' linears
// (kernels/qlinear.h, layer_act_qmax): with |q| ≤ 63 the weight bytes can
// enter vpmaddubsw unsigned (p + 128 ≤ 255, and 255 · 63 · 2 < 32768, so no
// pair saturates) and bias16 restores Σ p·q, which saves the vpabsb /
// vpsignb pair the signed dot needs per weight vector and pass.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_vector.h"
#include "kernels/cpu_isa.h"

namespace tessera::kernels {

enum class ActLayout { Natural, Lut4Pairs, BlockHalves };

constexpr int64_t kActBlock = 8;  // columns per activation scale (one lane of a lut4 chunk)
// The coarser scale block the fast level's interleaved layers take
// (kernels/interleaved_linear.h): one scale per 32 columns, as llama.cpp's
// Q8_0 / Q8_1 activations; quality in docs/QUANTIZATION.md.
constexpr int64_t kActBlockCoarse = 32;
constexpr int kMaxActPasses = 2;  // x, then its rounding residual
constexpr int kActQmax = 127;      // the full int8 range
constexpr int kActQmaxNarrow = 63;  // the AVX2 kernels' unsigned-weight range (above)

inline int64_t act_chunk_cols(ActLayout layout) { return layout == ActLayout::Natural ? 64 : 128; }

// The byte of a row's q (of one pass) that holds column c.
inline int64_t act_position(ActLayout layout, int64_t c) {
  const int64_t m = c / 128, k = c % 128;
  switch (layout) {
    case ActLayout::Natural: break;
    case ActLayout::Lut4Pairs: return m * 128 + (k % 2 == 0 ? k / 2 : 64 + k / 2);
    case ActLayout::BlockHalves: return m * 128 + (k % 8 < 4 ? 0 : 64) + 4 * (k / 8) + k % 4;
  }
  return c;
}

struct Int8Activations {
  ActLayout layout = ActLayout::Natural;
  int64_t rows = 0, cols = 0;
  int64_t chunks = 0;             // per row: ceil(cols / chunk_cols)
  int passes = 1;                 // 1 or 2 (x, then its residual)
  int qmax = kActQmax;            // |q| ≤ qmax in every pass
  int64_t block_cols = kActBlock; // columns per scale: kActBlock or kActBlockCoarse
  AlignedVector<int8_t> q;        // [rows][passes][chunks · chunk_cols]
  AlignedVector<float> scale16;   // [rows][passes][chunks][16]
  AlignedVector<int32_t> bias16;  // [rows][passes][chunks][16]
  // Which quantization filled it: unique to each quantize_activations call
  // in the process (0: unknown), so a kernel may keep what it derived from
  // these rows across the calls that read them (kernels/interleaved_walk.h).
  uint64_t version = 0;

  int64_t row_bytes() const { return chunks * act_chunk_cols(layout); }
  const int8_t* q_row(int64_t t, int pass = 0) const { return q.data() + (t * passes + pass) * row_bytes(); }
  const float* scale_row(int64_t t, int pass = 0) const {
    return scale16.data() + (t * passes + pass) * chunks * 16;
  }
  const int32_t* bias_row(int64_t t, int pass = 0) const {
    return bias16.data() + (t * passes + pass) * chunks * 16;
  }
};

// The rounding residual x − s·q of one pass over one row of `cols` values
// (what pass 1 quantizes), per column, into residual[0..cols).
void activation_residual(Isa isa, const float* x, int64_t cols, float* residual);

// Quantizes x [rows][cols] into `out` in `passes` passes (1 or 2; buffers
// reused when large enough), to |q| ≤ qmax (1..127). Deterministic: the
// same bits on every machine and at every level; `isa` only picks the
// implementation (Isa::Scalar: the plain one, the twin the others are tested
// against; avx2, avx512 / amx, neon: vector ones).
// block_cols: columns per scale, kActBlock (8) or kActBlockCoarse (32);
// scale16 then holds each lane's block scale (a 32-column block's in each
// of its lanes).
void quantize_activations(Isa isa, const float* x, int64_t rows, int64_t cols, ActLayout layout, int passes,
                          Int8Activations& out, int qmax = kActQmax, int64_t block_cols = kActBlock);

// A chunk's 16 lane scales and -128·Σq corrections (scale16 / bias16) from
// its quantized bytes in column order and its block scales (the scalar and
// NEON rows share it).
void act_lane_terms(const int8_t* natural, const float* block_scale, ActLayout layout, float* sr16, int32_t* br16,
                    int64_t block_cols = kActBlock);

// One pass over one row (the unit both implementations share): the row's
// q bytes (`chunks` chunks of `layout`), scale16 and bias16 into qr / sr /
// br, and x − s·q per column into `residual` when it is set.
void quantize_act_row_scalar(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax, int8_t* qr,
                             float* sr, int32_t* br, float* residual, int64_t block_cols = kActBlock);
// The same bits with AVX2 (any qmax) / AVX-512 (VNNI, VBMI; qmax 127); a
// scale per 8 columns, or per 32 in the Natural layout; false
// for a row they leave to the scalar row (outputs then unspecified): one
// holding a NaN or an infinity, and for AVX2 one with a block max so small
// that qmax / max overflows.
bool quantize_act_row_avx2(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax, int8_t* qr,
                           float* sr, int32_t* br, float* residual, int64_t block_cols = kActBlock);
bool quantize_act_row_avx512(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int8_t* qr, float* sr,
                             int32_t* br, float* residual, int64_t block_cols = kActBlock);
// The same bits with NEON (AArch64 builds only; any qmax; a scale per 8
// columns, or per 32 in the Natural layout); false for a row holding a NaN
// or an infinity, or a block max so small that qmax / max overflows.
bool quantize_act_row_neon(const float* xr, int64_t cols, ActLayout layout, int64_t chunks, int qmax, int8_t* qr,
                           float* sr, int32_t* br, float* residual, int64_t block_cols = kActBlock);

}  // namespace tessera::kernels

// The fast level's linear on blocked weights (blk4 / blk8: a quantized
// GGUF's own codes and block scales), with the weights interleaved 16 rows
// at a time so that one vector of weights serves every token of a call:
// prefill, batched decode and speculative verification read each weight
// once per tile of tokens, and a row's bits never depend on how many tokens
// the call holds or which rows a thread takes.
//
// Contract. Activations are the one-pass int8 rows of kernels/
// int8_activations.h (Natural layout, kActQmax) with a scale per A = 8 or
// 32 columns (acts.block_cols): per block a of token t a scale s[t,a] and
// codes q[t,c]. A weight block of B columns (16 or 32) is cut into
// segments of min(A, B) columns, each inside one activation block. For
// output row n, with v[n,c] the weight's int8 value (blk8: the stored byte;
// blk4: the codebook entry of the code), ws / wo the block's scale /
// offset, and a(k) the activation block of segment k:
//   d[k]  = exact int32 Σ_{c in segment k} v[n,c] · q[t,c]
//   tb[b] = float(d[k0]) · s[t,a(k0)], then tb = fma(float(d[k]), s[t,a(k)], tb)
//           for the block's further segments, in column order
//   u[b]  = float(Σq[k0]) · s[t,a(k0)], then u = fma(float(Σq[k]), s[t,a(k)], u)
//           (blocks with offsets; the same for every row)
//   acc   = fma(ws[n,b], tb[b], acc), then acc = fma(wo[n,b], u[b], acc),
//           over the blocks in column order from acc = 0
//   y[t,n] = acc (+ bias[n])
// A = 32 (the fast level's layers) makes every block one segment: per
// block one convert and one multiply where A = 8 (the head, whose
// refinement bounds 8-column residuals) takes one per 8 columns.
// Integer sums are exact and every f32 operation is specified, so the
// scalar twin, AVX2, AVX-512 and NEON give identical bits for any row split
// and any number of tokens per call.
//
// Layout (InterleavedWeights, built once at load from the bundle's bytes,
// the same size as them). Rows go in groups of 16 (the last zero-padded);
// a group's weights are a run of 64-byte vectors whose byte 4r+i belongs to
// row r of the group:
//   8-bit codes (blk8): vector j holds columns 4j..4j+3 (byte 4r+i: column
//         4j+i), as u = v + weight_offset (an unsigned byte);
//   4-bit codes (blk4): vector j holds the codes of columns 8j..8j+7 (byte
//         4r+i: column 8j+i in the low nibble, 8j+4+i in the high one); the
//         kernels look u = codebook value + weight_offset up from a 16-entry
//         table;
//   5- and 6-bit codes (blk5 / blk6 whose codebook is consecutive integers,
//         so u is the code): units of P nibble vectors, each as blk4's,
//         followed by one plane vector with the codes' high bits (P = 4 for
//         5 bits, 2 for 6). With h = bits − 4, bits [s·h, (s+1)·h) of the
//         plane's byte 4r+i are the high bits of the code in byte 4r+i of
//         the unit's nibble vector s / 2, low nibble for even s, high for
//         odd. A unit never spans two blocks (P divides the 8-column groups
//         per block), and a group reads its vectors as one stream.
// So a 32-bit lane of a vector is one row: an unsigned×signed 4-byte dot
// (vpdpbusd, or NEON's sdot on the signed values) against 4 activation
// bytes broadcast to every lane adds 4 columns to 16 rows at once, with no
// reduction across lanes. weight_offset is 0 when the values are already
// small and unsigned (Q4_1, Q4_K), −(smallest value) when the range fits in
// 0..127 (Q4_0, Q6_K), else 128; the dot then takes −weight_offset · Σq as
// its starting value. Block scales / offsets go per group and block as 16
// values (one per row), in their stored type (f16 or f32); super-block
// scales (core/weight_format.h) as 16 int8 factors per group and block and
// 16 f16 multipliers per group and super-block, multiplied in f32 (exact)
// into the block's value.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/aligned_vector.h"
#include "core/huge_page_arena.h"
#include "kernels/cpu_isa.h"
#include "kernels/int8_activations.h"
#include "kernels/qlinear.h"
#include "kernels/qlinear_refine.h"

namespace tessera::kernels {

constexpr int64_t kInterleavedRows = 16;  // rows per group (one int32 lane each in 64 bytes)
constexpr int64_t kActGroup = 8;          // columns per 4-byte activation word pair (one step of the kernels)

// How a block's scales and offsets are stored: a value per block in f16 or
// f32, or an int8 factor per block times an f16 multiplier per super-block.
enum class BlockParams { F16, F32, Super };

// What the vector kernels specialize on: bits per code in the layout (4:
// nibbles, through the table when `lookup`; 5 / 6: nibbles and a plane of
// high bits, u the code; 8: bytes), columns per block, how block values
// are stored, offsets.
struct InterleavedForm {
  int code_bits = 8;
  bool lookup = false;
  int64_t block_cols = 0;
  BlockParams params = BlockParams::F16;
  bool offsets = false;
  bool operator==(const InterleavedForm&) const = default;
};

// Whether the vector kernels are compiled for the form
// (kernels/interleaved_walk.h, VectorForms: the forms GGUF transcoding writes).
bool has_vector_kernels(const InterleavedForm& form);

class InterleavedWeights {
 public:
  // Blocked weights (blk4 ... blk8) the lane kernels could run
  // (QLinearWeights::supported) whose layout has vector kernels
  // (has_vector_kernels(form_of(w))); any other runs on the lane kernels.
  static bool supported(const WeightView& w);
  // The layout's form for w: 4-bit codes through the table unless the
  // codebook is 16 consecutive integers with weight_offset < 128; 5 / 6 bits
  // as nibbles and planes when the codebook is consecutive integers from
  // above −128 and a unit fits a block, else bytes; 8 bits bytes.
  static InterleavedForm form_of(const WeightView& w);
  const InterleavedForm& form() const { return form_; }
  // Error if !supported(w). The layout's bytes come from `arena` (huge
  // pages; the model's weights), else from the heap (tests, benchmarks).
  // `give_back`: w's stored bytes are given back to the system as they are
  // copied (core/huge_page_arena.h, release_pages), so the weight is never
  // held twice; reading them afterwards finds zeros where the bundle was
  // read into memory, so only the copy may be read (restore_rows).
  explicit InterleavedWeights(const WeightView& w, std::shared_ptr<HugePageArena> arena = nullptr,
                              bool give_back = false);

  // Bits per code in the layout: 4 (nibbles, through the table), 5 or 6
  // (nibbles and a plane of high bits; u is the code), 8 (bytes).
  int code_bits() const { return code_bits_; }
  bool nibbles() const { return code_bits_ < 8; }
  int plane_bits() const { return nibbles() ? code_bits_ - 4 : 0; }
  // 5 / 6 bits: nibble vectors per unit (one plane vector follows them).
  int unit_vectors() const { return plane_bits() == 1 ? 4 : 2; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return (rows_ + kInterleavedRows - 1) / kInterleavedRows; }
  int64_t block_cols() const { return block_cols_; }
  int64_t blocks() const { return cols_ / block_cols_; }
  bool block_f32() const { return block_f32_; }
  bool block_offsets() const { return block_offsets_; }
  // Super-block scales: blocks per super-block (0: a value per block).
  int64_t super_blocks() const { return super_blocks_; }
  int weight_offset() const { return weight_offset_; }
  // Every u fits in 0..127 (weight_offset < 128): the AVX2 and NEON kernels
  // then multiply u directly, else the signed values u − 128.
  bool small_unsigned() const { return weight_offset_ < 128; }
  // 4 bits: u = code for every code (the values are the codes, shifted by
  // −weight_offset): no lookup. Always so for 5 and 6 bits.
  bool identity_table() const { return identity_; }
  // 64-byte vectors per group: 8 bits cols / 4, 4 bits cols / 8, 5 and 6
  // bits cols / 8 and a plane vector per unit.
  int64_t vectors_per_group() const {
    if (!nibbles()) return cols_ / 4;
    return code_bits_ == 4 ? cols_ / 8 : cols_ / 8 + cols_ / (8 * unit_vectors());
  }
  const uint8_t* group_data(int64_t g) const { return data_ + g * vectors_per_group() * 64; }
  // The 16 rows' scales (offsets) of group g and block b: 16 f16 or f32
  // values, or with super-blocks 16 int8 factors, whose multipliers are
  // group_scale_multipliers(g, b) (16 f16).
  const uint8_t* group_scales(int64_t g, int64_t b) const { return params(scales_, g, b); }
  const uint8_t* group_offsets(int64_t g, int64_t b) const { return params(offsets_, g, b); }
  const uint8_t* group_scale_multipliers(int64_t g, int64_t b) const { return multipliers(scales_, g, b); }
  const uint8_t* group_offset_multipliers(int64_t g, int64_t b) const { return multipliers(offsets_, g, b); }
  // 4 bits: u of each code, repeated to fill 64 bytes (entry i at byte j, j mod 16 = i).
  const uint8_t* table() const { return table_; }

  // The values the kernels multiply, read back from the layout (scalar twin, tests).
  int value(int64_t n, int64_t c) const;   // v[n][c] = u − weight_offset
  float scale(int64_t n, int64_t b) const;
  float offset(int64_t n, int64_t b) const;
  // Rows [n0, n1) back in a form the lane kernels read, as `out.view`:
  // 4-bit codes as blk4 (the codes and codebook the bundle held), others as
  // blk8 bytes; block values in their stored f16 or f32, super-block ones
  // as f32. Each decodes to the stored weight's values, and the lane
  // kernels give it the bits they give the expanded stored weight
  // (QLinearWeights, Expand::Yes): what reads a few rows of a weight whose
  // stored bytes were given back (the embedding lookup, the head's
  // two-pass refinement).
  struct StoredRows {
    std::vector<uint8_t> data, block_params;
    std::vector<float> codebook;
    WeightView view;
  };
  void restore_rows(int64_t n0, int64_t n1, StoredRows& out) const;
  // The head's one-pass outputs may stand in for the lane kernels' in its
  // refinement (kernels/qlinear_refine.h) when its f32 rounding fits the
  // bound ρ = 1e-5 · W · (‖x‖₁ + ‖e1‖₁) takes for them: a group's term
  // passes through at most (block_cols / 8) roundings in its block's sum
  // and one per block's term added to the row's (two with offsets), each
  // within 2⁻²⁴ of the running magnitude, itself ≤ W · ‖x̃‖₁ (the int32
  // sums, their conversion and a super-block value's product are exact).
  static bool fits_refine_bound(const WeightView& w) {
    const int64_t roundings = w.block_cols / kActBlock + (w.block_offsets ? 2 : 1) * w.blocks_per_row();
    return static_cast<double>(roundings) * 0x1p-24 * 1.01 <= 1e-5;
  }
  // Bytes held (weights and block parameters).
  int64_t bytes() const { return data_bytes_ + param_bytes_ * (block_offsets_ ? 2 : 1); }

 private:
  InterleavedForm form_;  // form_of(the weight)
  int code_bits_ = 8;
  int64_t rows_, cols_, block_cols_;
  bool block_f32_, block_offsets_;
  int64_t super_blocks_ = 0;
  int weight_offset_ = 0;
  bool identity_ = false;
  alignas(64) uint8_t table_[64] = {};
  // One piece of memory: the weights, then the scales, then the offsets
  // (with super-blocks each: the factors, then the multipliers).
  std::shared_ptr<HugePageArena> arena_;
  AlignedVector<uint8_t> heap_;
  uint8_t* data_ = nullptr;
  uint8_t* scales_ = nullptr;
  uint8_t* offsets_ = nullptr;
  int64_t data_bytes_ = 0, param_bytes_ = 0;
  int64_t supers() const { return super_blocks_ > 0 ? blocks() / super_blocks_ : 0; }
  const uint8_t* params(const uint8_t* p, int64_t g, int64_t b) const {
    return p + (g * blocks() + b) * kInterleavedRows * (super_blocks_ > 0 ? 1 : block_f32_ ? 4 : 2);
  }
  const uint8_t* multipliers(const uint8_t* p, int64_t g, int64_t b) const {
    return p + groups() * blocks() * kInterleavedRows + (g * supers() + b / super_blocks_) * kInterleavedRows * 2;
  }
  float param(const uint8_t* p, int64_t n, int64_t b) const;
  // Where column c of row n's code lives: its nibble vector's byte (or the
  // byte of an 8-bit code), and for 5 / 6 bits the plane byte and the
  // shift of its high bits there.
  struct CodeAt {
    int64_t byte, plane_byte;
    int nibble_shift, plane_shift;
  };
  CodeAt code_at(int64_t n, int64_t c) const;
  // What the layout holds for row n, column c: 8 bits its byte u, else its code.
  int code(int64_t n, int64_t c) const;
};

// Columns per segment (contract above) of w against activations with
// `act_block_cols` columns per scale; Error unless one divides the other.
int64_t segment_cols(const InterleavedWeights& w, int64_t act_block_cols);
// Whether each of w's blocks is one segment against acts (activation blocks
// of whole weight blocks): the kernels' Whole path, one int32 dot per block.
bool whole_block_segments(const InterleavedWeights& w, const Int8Activations& acts);

// Per token, what every row of a call shares: the segments' activation
// scales, their Σq, and per block the offsets' u (contract above). Built
// once per call and thread by the kernels' walk.
struct TokenTerms {
  int64_t segments = 0, blocks = 0;
  std::vector<float> s;        // [tokens][segments]: s[t, a(k)]
  std::vector<int32_t> start;  // [tokens][segments]: −weight_offset · Σq, the dot's starting value
  std::vector<int32_t> qsum;   // [tokens][segments]: Σq
  std::vector<float> u;        // [tokens][blocks] (offsets only)
  void build(const InterleavedWeights& w, const Int8Activations& acts, int64_t t0, int64_t t1);
};

// y[t * ldy + n] for t < acts.rows and rows n of groups [g_begin, g_end)
// (rows past w.rows() are not written). acts: one pass, Natural layout,
// acts.cols == w.cols(), a scale per 8 or 32 columns.
void interleaved_linear(Isa isa, const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                        int64_t g_begin, int64_t g_end, float* y, int64_t ldy);

// The head's refinement (kernels/qlinear_refine.h, step 4) when its one-pass
// outputs came from the interleaved kernel: blocks scratch.blocks[begin,
// end) of the planned row recomputed with two passes into yt, each block's
// rows restored to their stored format first (restore_rows), so a refined
// output has the bits refine_blocks gives it on the stored weight. Steps 1-3
// run as they do for the lane kernels, on the stored weight's QLinearWeights
// (they read only its shape); the one-pass rounding must fit the bound
// (InterleavedWeights::fits_refine_bound).
void refine_blocks_interleaved(Isa isa, const InterleavedWeights& w, const RefineScratch& scratch, const float* bias,
                               int64_t begin, int64_t end, float* yt);

// The per-ISA kernels (same contract); Scalar is the twin the others are tested against.
void interleaved_linear_scalar(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                               int64_t g_begin, int64_t g_end, float* y, int64_t ldy);
void interleaved_linear_avx2(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                             int64_t g_begin, int64_t g_end, float* y, int64_t ldy);
// t_begin: tokens [t_begin, acts.rows) only (the AMX kernel's last tokens).
void interleaved_linear_avx512(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                               int64_t g_begin, int64_t g_end, float* y, int64_t ldy, int64_t t_begin = 0);
// AMX int8 tiles (TDPBSUD) for whole tiles of 16 tokens, AVX-512 for the
// rest: activations with a scale per 32 columns only (one segment per
// block, so a tile product's depth is a whole block).
bool interleaved_amx_applies(const InterleavedWeights& w, const Int8Activations& acts);
void interleaved_linear_amx(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                            int64_t g_begin, int64_t g_end, float* y, int64_t ldy);
void interleaved_linear_neon(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                             int64_t g_begin, int64_t g_end, float* y, int64_t ldy);  // AArch64 builds only

}  // namespace tessera::kernels

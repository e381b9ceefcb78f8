// Activations rounded to bf16 and laid out as the B operand of AMX bf16
// tile multiplies (kernels/qlinear_amx.h).
//
// A tile product C[16 rows][16 cols] += A[16][32 bf16] · B[16][16 pairs]
// reads B in "VNNI pair" order: B row p, column j holds the two bf16 values
// of K indices 2p and 2p+1 for output column j. The linear kernel puts
// weights in A (16 output features × 32 input columns, plain row order) and
// tokens in B, so a block of 16 tokens is stored as
//
//   pairs[block][p][j] = (bf16(x[16·block + j][2p]), bf16(x[16·block + j][2p + 1]))
//
// one uint32 per (pair, token), low half = the even column. A 32-column step
// of block b is then 16 consecutive rows of 64 bytes. Rows are zero-padded
// to a whole number of block pairs (the kernel multiplies two token blocks
// per weight tile), columns must be even (qlinear weights have cols % 64 == 0).
//
// Rounding: round-to-nearest-even of the f32 value's top 16 bits, inputs
// with a zero exponent (zeros, subnormals) become signed zero, NaN stays NaN
// (quiet) — what VCVTNE2PS2BF16 does, so the AVX512-BF16 packer and the plain
// one give the same bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/aligned_vector.h"
#include "kernels/cpu_isa.h"

namespace tessera::kernels {

constexpr int64_t kTileTokens = 16;  // tokens per B tile

inline uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);  // zero / subnormal
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN, quieted
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_f32(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

struct Bf16Activations {
  int64_t rows = 0, cols = 0;
  int64_t blocks = 0;             // token blocks of 16, even (rows zero-padded)
  AlignedVector<uint32_t> pairs;  // [blocks][cols / 2][16]

  const uint32_t* block(int64_t b) const { return pairs.data() + b * (cols / 2) * kTileTokens; }
  // The bf16 value of x[t][c], for the scalar twin and tests.
  uint16_t at(int64_t t, int64_t c) const {
    const uint32_t v = block(t / kTileTokens)[(c / 2) * kTileTokens + t % kTileTokens];
    return static_cast<uint16_t>(c % 2 == 0 ? v & 0xffffu : v >> 16);
  }
};

// Packs x [rows][cols] (cols even) into `out`, reusing its buffer. Isa::Amx
// uses AVX512-BF16 conversions; every level gives the same bits.
void pack_bf16_activations(Isa isa, const float* x, int64_t rows, int64_t cols, Bf16Activations& out);

// The same in two steps, for a thread split over token blocks: prepare sizes
// `out` and zeroes its padding; pack_bf16_blocks then fills token blocks
// [b_begin, b_end) of x (blocks are independent: any split, same bits).
inline int64_t bf16_data_blocks(int64_t rows) { return (rows + kTileTokens - 1) / kTileTokens; }
void prepare_bf16_activations(int64_t rows, int64_t cols, Bf16Activations& out);
void pack_bf16_blocks(Isa isa, const float* x, int64_t b_begin, int64_t b_end, Bf16Activations& out);

}  // namespace tessera::kernels

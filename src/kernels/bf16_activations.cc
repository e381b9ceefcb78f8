// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands are
// used uninitialized; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/bf16_activations.h"

#include <algorithm>

#include "core/error.h"

#if TESSERA_X86
#include <immintrin.h>

#include "kernels/transpose16_avx512.h"

#define TESSERA_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace tessera::kernels {

namespace {

void pack_row_plain(const float* x, int64_t cols, uint32_t* dst) {
  for (int64_t p = 0; p < cols / 2; ++p)
    dst[p * kTileTokens] = bf16_bits(x[2 * p]) | static_cast<uint32_t>(bf16_bits(x[2 * p + 1])) << 16;
}

#if TESSERA_X86
// 16 tokens × 32 columns at a time: VCVTNE2PS2BF16 makes each token's 16
// (even, odd) pairs in column order, and a 16×16 transpose turns them into
// 16 rows of the block, one per pair.
TESSERA_AVX512_BF16 void pack_block_avx512(const float* x, int64_t cols, int64_t tokens, uint32_t* dst) {
  int64_t c = 0;
  if (tokens == kTileTokens) {
    for (; c + 32 <= cols; c += 32) {
      __m512 v[16];
      for (int t = 0; t < 16; ++t) {
        const float* xt = x + t * cols + c;
        v[t] = _mm512_castsi512_ps(reinterpret_cast<__m512i>(
            _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xt + 16), _mm512_loadu_ps(xt))));
      }
      transpose16(v);
      uint32_t* d = dst + (c / 2) * kTileTokens;
      for (int p = 0; p < 16; ++p) _mm512_storeu_ps(reinterpret_cast<float*>(d + p * kTileTokens), v[p]);
    }
  }
  for (int64_t t = 0; t < tokens; ++t) pack_row_plain(x + t * cols + c, cols - c, dst + (c / 2) * kTileTokens + t);
}
#endif  // TESSERA_X86

}  // namespace

void prepare_bf16_activations(int64_t rows, int64_t cols, Bf16Activations& out) {
  if (cols % 2 != 0) fail("", "bf16 activations", "{} columns: pairs need an even count", cols);
  out.rows = rows;
  out.cols = cols;
  out.blocks = (rows + 2 * kTileTokens - 1) / (2 * kTileTokens) * 2;
  const size_t n = static_cast<size_t>(out.blocks * (cols / 2) * kTileTokens);
  if (out.pairs.size() < n) out.pairs.resize(n);
  // Padding tokens of the last block pair are zero.
  const int64_t first_pad_block = rows / kTileTokens;
  std::fill(out.pairs.begin() + first_pad_block * (cols / 2) * kTileTokens, out.pairs.begin() + static_cast<int64_t>(n),
            0u);
}

void pack_bf16_blocks(Isa isa, const float* x, int64_t b_begin, int64_t b_end, Bf16Activations& out) {
  const int64_t rows = out.rows, cols = out.cols;
  for (int64_t b = b_begin; b < b_end && b * kTileTokens < rows; ++b) {
    const int64_t tokens = std::min(kTileTokens, rows - b * kTileTokens);
    const float* xb = x + b * kTileTokens * cols;
    uint32_t* dst = out.pairs.data() + b * (cols / 2) * kTileTokens;
#if TESSERA_X86
    if (isa == Isa::Amx) {
      pack_block_avx512(xb, cols, tokens, dst);
      continue;
    }
#endif
    {
      for (int64_t t = 0; t < tokens; ++t) pack_row_plain(xb + t * cols, cols, dst + t);
    }
  }
}

void pack_bf16_activations(Isa isa, const float* x, int64_t rows, int64_t cols, Bf16Activations& out) {
  prepare_bf16_activations(rows, cols, out);
  pack_bf16_blocks(isa, x, 0, bf16_data_blocks(rows), out);
}

}  // namespace tessera::kernels

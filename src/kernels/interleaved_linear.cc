// InterleavedWeights (the 16-row layout), the per-token terms, the dispatch
// and the scalar twin of the fast level's blocked linear
// (kernels/interleaved_linear.h).
#include "kernels/interleaved_linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace tessera::kernels {

InterleavedWeights::InterleavedWeights(const QLinearWeights& w, std::shared_ptr<HugePageArena> arena)
    : blk4_(w.bits() == 4),
      rows_(w.rows()),
      cols_(w.cols()),
      block_cols_(w.block_cols()),
      block_f32_(w.block_f32()),
      block_offsets_(w.block_offsets()),
      arena_(std::move(arena)) {
  if (!supported(w)) fail("", "interleaved linear", "needs a blk4 or blk8 weight");
  if (cols_ % 64 != 0 || block_cols_ % kActGroup != 0)
    fail("", "interleaved linear", "{} columns in blocks of {} do not fit 8-column groups", cols_, block_cols_);
  // The values' range decides the offset that makes them unsigned bytes.
  int lo = 127, hi = -128;
  if (blk4_) {
    for (int i = 0; i < 16; ++i) {
      lo = std::min<int>(lo, w.table(0)[i]);
      hi = std::max<int>(hi, w.table(0)[i]);
    }
  } else {
    for (int64_t n = 0; n < rows_; ++n)
      for (int64_t c = 0; c < cols_; ++c) {
        const int v = static_cast<int8_t>(w.row(n)[c]);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  }
  if (lo > hi) lo = hi = 0;
  weight_offset_ = lo >= 0 && hi <= 127 ? 0 : (hi - lo <= 127 ? -lo : 128);
  if (blk4_) {
    identity_ = true;
    for (int j = 0; j < 64; ++j) {
      table_[j] = static_cast<uint8_t>(w.table(0)[j % 16] + weight_offset_);
      identity_ = identity_ && table_[j] == j % 16;
    }
  }
  const int64_t G = groups(), V = vectors_per_group();
  const int width = block_f32_ ? 4 : 2;
  data_bytes_ = G * V * 64;
  param_bytes_ = G * blocks() * kInterleavedRows * width;
  const int64_t total = data_bytes_ + param_bytes_ * (block_offsets_ ? 2 : 1);
  if (arena_) {
    data_ = arena_->allocate(static_cast<size_t>(total));
  } else {
    heap_.assign(static_cast<size_t>(total), 0);
    data_ = heap_.data();
  }
  scales_ = data_ + data_bytes_;
  offsets_ = block_offsets_ ? scales_ + param_bytes_ : nullptr;
  for (int64_t n = 0; n < rows_; ++n) {
    const int64_t g = n / kInterleavedRows, r = n % kInterleavedRows;
    const uint8_t* src = w.row(n);
    uint8_t* dst = data_ + g * V * 64 + 4 * r;
    for (int64_t j = 0; j < V; ++j)
      for (int i = 0; i < 4; ++i) {
        uint8_t byte;
        if (blk4_) {
          // Codes of columns 8j+i and 8j+4+i; the row's bytes pair columns 2k, 2k+1 as low, high nibble.
          const int64_t c0 = 8 * j + i, c1 = c0 + 4;
          const int lo_code = (src[c0 / 2] >> (4 * (c0 % 2))) & 15, hi_code = (src[c1 / 2] >> (4 * (c1 % 2))) & 15;
          byte = static_cast<uint8_t>(lo_code | hi_code << 4);
        } else {
          byte = static_cast<uint8_t>(static_cast<int8_t>(src[4 * j + i]) + weight_offset_);
        }
        dst[j * 64 + i] = byte;
      }
  }
  // Rows past the last (padding) keep zero scales and offsets.
  auto gather = [&](uint8_t* out, bool offsets) {
    for (int64_t n = 0; n < rows_; ++n) {
      const uint8_t* src = offsets ? w.block_offsets(n) : w.block_scales(n);
      for (int64_t b = 0; b < blocks(); ++b)
        std::memcpy(out + ((n / kInterleavedRows * blocks() + b) * kInterleavedRows + n % kInterleavedRows) *
                                     width,
                    src + b * width, width);
    }
  };
  gather(scales_, false);
  if (block_offsets_) gather(offsets_, true);
}

int InterleavedWeights::value(int64_t n, int64_t c) const {
  const uint8_t* v = group_data(n / kInterleavedRows) + 4 * (n % kInterleavedRows);
  if (!blk4_) return v[(c / 4) * 64 + c % 4] - weight_offset_;
  const uint8_t byte = v[(c / 8) * 64 + c % 4];
  return table_[c % 8 < 4 ? byte & 15 : byte >> 4] - weight_offset_;
}

float InterleavedWeights::param(const uint8_t* p, int64_t n, int64_t b) const {
  const uint8_t* at = params(p, n / kInterleavedRows, b) + (n % kInterleavedRows) * (block_f32_ ? 4 : 2);
  if (block_f32_) {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  return f16_to_f32(static_cast<uint16_t>(at[0] | at[1] << 8));
}

float InterleavedWeights::scale(int64_t n, int64_t b) const { return param(scales_, n, b); }
float InterleavedWeights::offset(int64_t n, int64_t b) const { return block_offsets_ ? param(offsets_, n, b) : 0.0f; }

void TokenTerms::build(const InterleavedWeights& w, const Int8Activations& acts, int64_t t0, int64_t t1) {
  groups = w.cols() / kActGroup;
  blocks = w.blocks();
  const int64_t T = t1 - t0, per_block = w.block_cols() / kActGroup;
  s.resize(static_cast<size_t>(T * groups));
  start.resize(s.size());
  qsum.resize(s.size());
  u.resize(static_cast<size_t>(T * blocks));
  for (int64_t t = 0; t < T; ++t) {
    // Natural layout: lane i of the flattened scale16 / bias16 covers columns 4i..4i+3.
    const float* sr = acts.scale_row(t0 + t);
    const int32_t* br = acts.bias_row(t0 + t);
    for (int64_t k = 0; k < groups; ++k) {
      const int32_t q = -(br[2 * k] + br[2 * k + 1]) / 128;
      s[t * groups + k] = sr[2 * k];
      qsum[t * groups + k] = q;
      start[t * groups + k] = -w.weight_offset() * q;
    }
    if (!w.block_offsets()) continue;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = t * groups + b * per_block;
      float v = static_cast<float>(qsum[k0]) * s[k0];
      for (int64_t k = 1; k < per_block; ++k) v = std::fma(static_cast<float>(qsum[k0 + k]), s[k0 + k], v);
      u[t * blocks + b] = v;
    }
  }
}

void interleaved_linear(Isa isa, const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                        int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  if (acts.cols != w.cols() || acts.layout != ActLayout::Natural || acts.passes != 1)
    fail("", "interleaved linear", "needs one-pass natural activations of {} columns, got {} columns in {} passes",
         w.cols(), acts.cols, acts.passes);
  switch (isa) {
#if TESSERA_X86
    case Isa::Amx:
    case Isa::Avx512: return interleaved_linear_avx512(w, acts, bias, g_begin, g_end, y, ldy);
    case Isa::Avx2: return interleaved_linear_avx2(w, acts, bias, g_begin, g_end, y, ldy);
#endif
#if TESSERA_ARM64
    case Isa::Neon: return interleaved_linear_neon(w, acts, bias, g_begin, g_end, y, ldy);
#endif
    case Isa::Scalar: return interleaved_linear_scalar(w, acts, bias, g_begin, g_end, y, ldy);
    default: break;
  }
  fail("options", "isa", "{} kernels were not compiled into this build", isa_name(isa));
}

// The contract, one row and token at a time, from the values the layout holds.
void interleaved_linear_scalar(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                               int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  TokenTerms terms;
  terms.build(w, acts, 0, acts.rows);
  const int64_t per_block = w.block_cols() / kActGroup;
  const int64_t n_end = std::min(w.rows(), g_end * kInterleavedRows);
  for (int64_t t = 0; t < acts.rows; ++t) {
    const int8_t* q = acts.q_row(t);
    const float* s = terms.s.data() + t * terms.groups;
    for (int64_t n = g_begin * kInterleavedRows; n < n_end; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < w.blocks(); ++b) {
        float tb = 0.0f;
        for (int64_t k = b * per_block; k < (b + 1) * per_block; ++k) {
          int32_t d = 0;
          for (int64_t c = k * kActGroup; c < (k + 1) * kActGroup; ++c) d += w.value(n, c) * q[c];
          tb = k == b * per_block ? static_cast<float>(d) * s[k] : std::fma(static_cast<float>(d), s[k], tb);
        }
        acc = std::fma(w.scale(n, b), tb, acc);
        if (w.block_offsets()) acc = std::fma(w.offset(n, b), terms.u[t * terms.blocks + b], acc);
      }
      y[t * ldy + n] = bias ? acc + bias[n] : acc;
    }
  }
}

}  // namespace tessera::kernels

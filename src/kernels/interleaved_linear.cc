// InterleavedWeights (the 16-row layout), the per-token terms, the dispatch
// and the scalar twin of the fast level's blocked linear
// (kernels/interleaved_linear.h).
#include "kernels/interleaved_linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/half.h"
#include "kernels/interleaved_walk.h"

namespace tessera::kernels {

namespace {

// 0 when the values are unsigned bytes already, −lo when the range fits in
// 0..127 after the shift, else 128 (kernels/interleaved_linear.h).
int offset_for_range(int lo, int hi) {
  if (lo > hi) return 0;
  return lo >= 0 && hi <= 127 ? 0 : (hi - lo <= 127 ? -lo : 128);
}

// The 4-bit codebook's values' range: lo, hi.
std::pair<int, int> codebook_range(const float* palette) {
  int lo = 127, hi = -128;
  for (int i = 0; i < 16; ++i) {
    lo = std::min<int>(lo, static_cast<int>(palette[i]));
    hi = std::max<int>(hi, static_cast<int>(palette[i]));
  }
  return {lo, hi};
}

}  // namespace

InterleavedForm InterleavedWeights::form_of(const WeightView& w) {
  InterleavedForm f;
  f.block_cols = w.block_cols;
  f.params = w.block_super > 0 ? BlockParams::Super : w.block_f32 ? BlockParams::F32 : BlockParams::F16;
  f.offsets = w.block_offsets;
  const int stored_bits = block_code_bits(w.format);
  if (stored_bits == 5 || stored_bits == 6) {
    bool consecutive = w.palette[0] > -128;
    for (int i = 1; i < 1 << stored_bits; ++i) consecutive = consecutive && w.palette[i] == w.palette[0] + i;
    const int64_t unit_cols = 8 * (stored_bits == 5 ? 4 : 2);
    if (consecutive && w.block_cols % unit_cols == 0) f.code_bits = stored_bits;
  } else if (stored_bits == 4) {
    f.code_bits = 4;
    const auto [lo, hi] = codebook_range(w.palette);
    const int offset = offset_for_range(lo, hi);
    bool identity = offset < 128;
    for (int i = 0; i < 16; ++i) identity = identity && static_cast<int>(w.palette[i]) + offset == i;
    f.lookup = !identity;
  }
  return f;
}

bool has_vector_kernels(const InterleavedForm& form) {
  return with_form(form, [](auto) {});
}

bool InterleavedWeights::supported(const WeightView& w) {
  return is_blocked(w.format) && QLinearWeights::supported(w) && has_vector_kernels(form_of(w));
}

InterleavedWeights::InterleavedWeights(const WeightView& w, std::shared_ptr<HugePageArena> arena, bool give_back)
    : rows_(w.rows()),
      cols_(w.cols()),
      block_cols_(w.block_cols),
      block_f32_(w.block_f32),
      block_offsets_(w.block_offsets),
      arena_(std::move(arena)) {
  if (!supported(w)) fail("", "interleaved linear", "needs a blocked weight of a form the vector kernels read");
  if (cols_ % 64 != 0 || block_cols_ % kActGroup != 0)
    fail("", "interleaved linear", "{} columns in blocks of {} do not fit 8-column groups", cols_, block_cols_);
  if (w.block_super > 0) {
    super_blocks_ = w.block_super / block_cols_;
    block_f32_ = false;
  }
  // The values' range decides the offset that makes them unsigned bytes
  // (form_of): 4 bits from the codebook; 5 and 6 bits as nibbles keep their
  // codes (u); bytes (8 bits, and 5 / 6 bits otherwise) find theirs while
  // the values are copied, then apply it to the copy.
  const int stored_bits = block_code_bits(w.format);
  form_ = form_of(w);
  code_bits_ = form_.code_bits;
  int lo = 127, hi = -128;
  if (code_bits_ == 5 || code_bits_ == 6) {
    weight_offset_ = -static_cast<int>(w.palette[0]);
    identity_ = true;
  } else if (code_bits_ == 4) {
    std::tie(lo, hi) = codebook_range(w.palette);
    weight_offset_ = offset_for_range(lo, hi);
    identity_ = !form_.lookup;
    for (int j = 0; j < 64; ++j) table_[j] = static_cast<uint8_t>(static_cast<int>(w.palette[j % 16]) + weight_offset_);
  }
  const int64_t G = groups(), V = vectors_per_group();
  data_bytes_ = G * V * 64;
  param_bytes_ = super_blocks_ > 0 ? G * (blocks() + 2 * supers()) * kInterleavedRows
                                   : G * blocks() * kInterleavedRows * (block_f32_ ? 4 : 2);
  const int64_t total = data_bytes_ + param_bytes_ * (block_offsets_ ? 2 : 1);
  if (arena_) {
    data_ = arena_->allocate(static_cast<size_t>(total));
  } else {
    heap_.assign(static_cast<size_t>(total), 0);
    data_ = heap_.data();
  }
  scales_ = data_ + data_bytes_;
  offsets_ = block_offsets_ ? scales_ + param_bytes_ : nullptr;
  // The stored codes, given back a few pages at a time as they are copied
  // (`give_back`), so that the weight is never held twice.
  const auto* source = static_cast<const uint8_t*>(w.data);
  const int64_t row_bytes = static_cast<int64_t>(weight_data_bytes(w.format, 1, cols_));
  const uint8_t* given_back = source;
  auto give_back_until = [&](const uint8_t* end) {
    if (!give_back || end <= given_back) return;
    release_pages(given_back, static_cast<size_t>(end - given_back));
    given_back = end;  // release_pages keeps the partial pages at both ends; the next call's range starts here
  };
  const int64_t P = nibbles() && code_bits_ > 4 ? unit_vectors() : 1;
  for (int64_t n = 0; n < rows_; ++n) {
    const uint8_t* src = source + n * row_bytes;
    uint8_t* row_base = data_ + (n / kInterleavedRows) * V * 64 + 4 * (n % kInterleavedRows);
    for (int64_t k = 0; k < cols_ / 8; ++k) {
      // The 8 codes of columns 8k..8k+7: `stored_bits` bytes of the row's bit string.
      uint64_t word = 0;
      std::memcpy(&word, src + k * stored_bits, static_cast<size_t>(stored_bits));
      int code[8];
      for (int i = 0; i < 8; ++i) code[i] = static_cast<int>((word >> (i * stored_bits)) & ((1u << stored_bits) - 1));
      if (nibbles()) {
        const int64_t unit = k / P, in_unit = k % P;
        uint8_t* nib = row_base + (code_bits_ == 4 ? k : unit * (P + 1) + in_unit) * 64;
        uint8_t* plane = row_base + (unit * (P + 1) + P) * 64;
        const int hb = plane_bits();
        for (int i = 0; i < 4; ++i) {
          nib[i] = static_cast<uint8_t>((code[i] & 15) | (code[i + 4] & 15) << 4);
          if (hb > 0)
            plane[i] = static_cast<uint8_t>(plane[i] | (code[i] >> 4) << (2 * in_unit * hb) |
                                            (code[i + 4] >> 4) << ((2 * in_unit + 1) * hb));
        }
      } else {
        for (int i = 0; i < 8; ++i) {
          const int v = stored_bits == 8 ? static_cast<int8_t>(code[i]) : static_cast<int>(w.palette[code[i]]);
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          row_base[(2 * k + i / 4) * 64 + i % 4] = static_cast<uint8_t>(v);
        }
      }
    }
    if (n % 256 == 255) give_back_until(page_floor(src + row_bytes));
  }
  give_back_until(page_floor(source + rows_ * row_bytes));
  if (!nibbles()) {
    weight_offset_ = offset_for_range(lo, hi);
    if (weight_offset_ != 0)
      for (int64_t i = 0; i < data_bytes_; ++i) data_[i] = static_cast<uint8_t>(static_cast<int8_t>(data_[i]) + weight_offset_);
  }
  // Rows past the last (padding) keep zero scales and offsets. Super-block
  // scales: each section's factors [rows][blocks], then its multipliers
  // [rows][supers] (core/weight_format.h).
  const auto* stored = static_cast<const uint8_t*>(w.block_params);
  const int64_t width = block_f32_ ? 4 : 2;
  for (int sec = 0; sec < (block_offsets_ ? 2 : 1); ++sec) {
    uint8_t* out = sec ? offsets_ : scales_;
    for (int64_t n = 0; n < rows_; ++n) {
      const int64_t g = n / kInterleavedRows, r = n % kInterleavedRows;
      if (super_blocks_ > 0) {
        const uint8_t* section = stored + sec * rows_ * (blocks() + 2 * supers());
        for (int64_t b = 0; b < blocks(); ++b)
          out[(g * blocks() + b) * kInterleavedRows + r] = section[n * blocks() + b];
        for (int64_t s = 0; s < supers(); ++s)
          std::memcpy(out + groups() * blocks() * kInterleavedRows + ((g * supers() + s) * kInterleavedRows + r) * 2,
                      section + rows_ * blocks() + 2 * (n * supers() + s), 2);
        continue;
      }
      const uint8_t* src = stored + (sec * rows_ + n) * blocks() * width;
      for (int64_t b = 0; b < blocks(); ++b)
        std::memcpy(out + ((g * blocks() + b) * kInterleavedRows + r) * width, src + b * width, width);
    }
  }
  if (give_back) release_pages(stored, static_cast<size_t>(scales_section_bytes(w)));
}

InterleavedWeights::CodeAt InterleavedWeights::code_at(int64_t n, int64_t c) const {
  const int64_t base = (n / kInterleavedRows) * vectors_per_group() * 64 + 4 * (n % kInterleavedRows) + c % 4;
  if (!nibbles()) return {base + (c / 4) * 64, 0, 0, 0};
  const int64_t k = c / 8;
  const int half = static_cast<int>(c % 8) / 4;
  if (code_bits_ == 4) return {base + k * 64, 0, 4 * half, 0};
  const int64_t P = unit_vectors(), unit = k / P, slot = 2 * (k % P) + half;
  return {base + (unit * (P + 1) + k % P) * 64, base + (unit * (P + 1) + P) * 64, 4 * half,
          static_cast<int>(slot) * plane_bits()};
}

int InterleavedWeights::code(int64_t n, int64_t c) const {
  const CodeAt at = code_at(n, c);
  if (!nibbles()) return data_[at.byte];
  const int low = (data_[at.byte] >> at.nibble_shift) & 15;
  if (code_bits_ == 4) return low;
  return low | ((data_[at.plane_byte] >> at.plane_shift) & ((1 << plane_bits()) - 1)) << 4;
}

int InterleavedWeights::value(int64_t n, int64_t c) const {
  return (code_bits_ == 4 ? table_[code(n, c)] : code(n, c)) - weight_offset_;
}

float InterleavedWeights::param(const uint8_t* p, int64_t n, int64_t b) const {
  const int64_t g = n / kInterleavedRows, r = n % kInterleavedRows;
  if (super_blocks_ > 0) {
    const uint8_t* m = multipliers(p, g, b) + 2 * r;
    return f16_to_f32(static_cast<uint16_t>(m[0] | m[1] << 8)) * static_cast<float>(static_cast<int8_t>(params(p, g, b)[r]));
  }
  const uint8_t* at = params(p, g, b) + r * (block_f32_ ? 4 : 2);
  if (block_f32_) {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  return f16_to_f32(static_cast<uint16_t>(at[0] | at[1] << 8));
}

float InterleavedWeights::scale(int64_t n, int64_t b) const { return param(scales_, n, b); }
float InterleavedWeights::offset(int64_t n, int64_t b) const { return block_offsets_ ? param(offsets_, n, b) : 0.0f; }

void InterleavedWeights::restore_rows(int64_t n0, int64_t n1, StoredRows& out) const {
  const bool four = code_bits_ == 4, f32 = block_f32_ || super_blocks_ > 0;
  const int64_t rows = n1 - n0, width = f32 ? 4 : 2, row_bytes = four ? cols_ / 2 : cols_;
  out.data.assign(static_cast<size_t>(rows * row_bytes), 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = out.data.data() + r * row_bytes;
    for (int64_t c = 0; c < cols_; ++c) {
      if (four) dst[c / 2] = static_cast<uint8_t>(dst[c / 2] | code(n0 + r, c) << (4 * (c % 2)));
      else dst[c] = static_cast<uint8_t>(static_cast<int8_t>(value(n0 + r, c)));
    }
  }
  const int64_t sections = block_offsets_ ? 2 : 1;
  out.block_params.assign(static_cast<size_t>(sections * rows * blocks() * width), 0);
  for (int64_t sec = 0; sec < sections; ++sec)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < blocks(); ++b) {
        const int64_t n = n0 + r;
        uint8_t* dst = out.block_params.data() + ((sec * rows + r) * blocks() + b) * width;
        if (super_blocks_ > 0) {
          const float v = param(sec ? offsets_ : scales_, n, b);
          std::memcpy(dst, &v, 4);
        } else {
          std::memcpy(dst, params(sec ? offsets_ : scales_, n / kInterleavedRows, b) + (n % kInterleavedRows) * width, width);
        }
      }
  out.codebook.clear();
  if (four)
    for (int i = 0; i < 16; ++i) out.codebook.push_back(static_cast<float>(table_[i] - weight_offset_));
  out.view = WeightView{};
  out.view.format = four ? WeightFormat::Blk4 : WeightFormat::Blk8;
  out.view.shape = {rows, cols_};
  out.view.data = out.data.data();
  out.view.block_params = out.block_params.data();
  out.view.block_cols = block_cols_;
  out.view.block_f32 = f32;
  out.view.block_offsets = block_offsets_;
  out.view.palette = four ? out.codebook.data() : nullptr;
}

int64_t segment_cols(const InterleavedWeights& w, int64_t act_block_cols) {
  const int64_t a = act_block_cols, b = w.block_cols();
  if (a % kActGroup != 0 || b % kActGroup != 0 || (a % b != 0 && b % a != 0))
    fail("", "interleaved linear", "activation blocks of {} columns do not nest with weight blocks of {}", a, b);
  return std::min(a, b);
}

bool whole_block_segments(const InterleavedWeights& w, const Int8Activations& acts) {
  return segment_cols(w, acts.block_cols) == w.block_cols();
}

void TokenTerms::build(const InterleavedWeights& w, const Int8Activations& acts, int64_t t0, int64_t t1) {
  const int64_t seg = segment_cols(w, acts.block_cols), lanes = seg / 4;
  segments = w.cols() / seg;
  blocks = w.blocks();
  const int64_t T = t1 - t0, per_block = w.block_cols() / seg;
  s.resize(static_cast<size_t>(T * segments));
  start.assign(s.size(), 0);  // stays 0 for unsigned values (weight_offset 0)
  qsum.resize(s.size());
  u.resize(static_cast<size_t>(T * blocks));
  for (int64_t t = 0; t < T; ++t) {
    // Natural layout: lane i of the flattened scale16 / bias16 covers
    // columns 4i..4i+3 (each lane holds its activation block's scale).
    const float* sr = acts.scale_row(t0 + t);
    const int32_t* br = acts.bias_row(t0 + t);
    for (int64_t k = 0; k < segments; ++k) {
      int32_t bias = 0;
      for (int64_t i = 0; i < lanes; ++i) bias += br[lanes * k + i];
      s[t * segments + k] = sr[lanes * k];
      qsum[t * segments + k] = -bias / 128;
    }
    if (w.weight_offset() != 0)
      for (int64_t k = 0; k < segments; ++k) start[t * segments + k] = -w.weight_offset() * qsum[t * segments + k];
    if (!w.block_offsets()) continue;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = t * segments + b * per_block;
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
  segment_cols(w, acts.block_cols);  // Error unless the blocks nest
  switch (isa) {
#if TESSERA_X86
    case Isa::Amx:
      if (interleaved_amx_applies(w, acts)) return interleaved_linear_amx(w, acts, bias, g_begin, g_end, y, ldy);
      return interleaved_linear_avx512(w, acts, bias, g_begin, g_end, y, ldy);
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

void refine_blocks_interleaved(Isa isa, const InterleavedWeights& w, const RefineScratch& scratch, const float* bias,
                               int64_t begin, int64_t end, float* yt) {
  InterleavedWeights::StoredRows stored;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t b0 = scratch.blocks[static_cast<size_t>(i)] * 4, b1 = std::min(w.rows(), b0 + 4);
    w.restore_rows(b0, b1, stored);
    const QLinearWeights rows4(stored.view);
    qlinear(isa, rows4, scratch.acts, bias ? bias + b0 : nullptr, 0, b1 - b0, yt + b0, 0);
  }
}

// The contract, one row and token at a time, from the values the layout holds.
void interleaved_linear_scalar(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                               int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  TokenTerms terms;
  terms.build(w, acts, 0, acts.rows);
  const int64_t seg = segment_cols(w, acts.block_cols), per_block = w.block_cols() / seg;
  const int64_t n_end = std::min(w.rows(), g_end * kInterleavedRows);
  for (int64_t t = 0; t < acts.rows; ++t) {
    const int8_t* q = acts.q_row(t);
    const float* s = terms.s.data() + t * terms.segments;
    for (int64_t n = g_begin * kInterleavedRows; n < n_end; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < w.blocks(); ++b) {
        float tb = 0.0f;
        for (int64_t k = b * per_block; k < (b + 1) * per_block; ++k) {
          int32_t d = 0;
          for (int64_t c = k * seg; c < (k + 1) * seg; ++c) d += w.value(n, c) * q[c];
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

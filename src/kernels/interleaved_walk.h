// The walk every vector level of the interleaved linear shares
// (kernels/interleaved_linear.h): the call's token terms built once per
// thread, tiles of kTokenTile tokens (their int8 rows in L1), and within a
// tile blocks of RG row
// groups × TT tokens, so that RG·TT independent accumulator chains hide the
// multiply-adds' latency and each weight vector serves TT tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "kernels/interleaved_linear.h"

namespace tessera::kernels {

// The tokens of one tile block: their int8 rows (as 4-byte words), group
// scales, dot starting values and offsets' u, at token index i of the block.
template <int TT>
struct TokenBlock {
  const int32_t* q4[TT];
  const float* s[TT];
  const int32_t* start[TT];
  const float* u[TT];
  float* y[TT];
};

// The compile-time form of a weight the vector kernels specialize on
// (InterleavedForm): Bits per code (4: nibbles, looked up through the
// table unless they are the values; 5 / 6: nibbles and a plane of high
// bits; 8: bytes), 8-column groups per block, how block values are stored,
// offsets.
template <int Bits_, bool Lookup_, int PB_, BlockParams P_, bool Off_>
struct Form {
  static constexpr InterleavedForm key{Bits_, Lookup_, 8 * PB_, P_, Off_};
  static constexpr int Bits = Bits_;
  static constexpr bool B4 = Bits_ < 8;                 // nibble vectors
  static constexpr int HB = Bits_ < 8 ? Bits_ - 4 : 0;  // bits per code in the plane
  static constexpr int Unit = HB == 1 ? 4 : 2;          // nibble vectors per plane vector
  static constexpr bool Lookup = Lookup_, F32 = P_ == BlockParams::F32, Super = P_ == BlockParams::Super, Off = Off_;
  // u = the code, with weight_offset < 128 (InterleavedWeights::form_of):
  // every u ≤ 63, so the AVX2 and NEON kernels need no signed dot.
  static constexpr bool SmallCodes = B4 && !Lookup_;
  static constexpr int PB = PB_;
  static_assert(HB == 0 || PB % Unit == 0, "a unit of nibble vectors never spans two blocks");
  // Vector index, within a row group's stream, of group k's nibble vector
  // (B4) and of its unit's plane vector (HB > 0); kernels/interleaved_linear.h.
  static constexpr int64_t nibble_vector(int64_t k) { return HB ? k / Unit * (Unit + 1) + k % Unit : k; }
  static constexpr int64_t plane_vector(int64_t k) { return k / Unit * (Unit + 1) + Unit; }
  // Bit position in a plane byte of the high bits of group k's low (half 0)
  // or high (half 1) nibbles, and the left shift that moves them to bit 4
  // (negative: a right shift); bits from a neighbouring byte that a 16-bit
  // shift brings in land outside bits 4..4+HB-1 and are masked off.
  static constexpr int plane_shift(int64_t k, int half) { return 4 - (2 * static_cast<int>(k % Unit) + half) * HB; }
};

template <class... Fs>
struct FormList {};

// The forms the vector kernels are compiled for: those GGUF transcoding
// writes (convert/gguf_transcode.cc, layout_of), the only blocked weights a
// bundle holds. Every level's kernel is instantiated per form, dot kind and
// token count, so each form costs compile time (all 42 combinations of the
// fields took 4 minutes per x86 file); a weight of any other form runs on
// the lane kernels (InterleavedWeights::supported), and
// gguf_transcode_test checks that every transcoded type is listed here.
using VectorForms = FormList<Form<4, false, 4, BlockParams::F16, false>,    // Q4_0
                             Form<4, false, 4, BlockParams::F16, true>,     // Q4_1
                             Form<4, false, 4, BlockParams::Super, true>,   // Q4_K
                             Form<4, true, 4, BlockParams::F16, false>,     // IQ4_NL
                             Form<5, false, 4, BlockParams::F16, false>,    // Q5_0
                             Form<5, false, 4, BlockParams::F16, true>,     // Q5_1
                             Form<5, false, 4, BlockParams::Super, true>,   // Q5_K
                             Form<6, false, 2, BlockParams::Super, false>,  // Q6_K
                             Form<8, false, 2, BlockParams::Super, true>,   // Q2_K
                             Form<8, false, 2, BlockParams::Super, false>,  // Q3_K
                             Form<8, false, 4, BlockParams::F16, false>>;   // Q8_0

template <class F, class... Fs>
bool with_form_in(FormList<Fs...>, const InterleavedForm& form, F&& f) {
  return ((form == Fs::key ? (f(Fs{}), true) : false) || ...);
}

// f(Form<...>{}) for `form` if it is one of VectorForms; whether it was.
template <class F>
bool with_form(const InterleavedForm& form, F&& f) {
  return with_form_in(VectorForms{}, form, f);
}

// f(Form<...>{}) for w's form (InterleavedWeights::supported made sure it has one).
template <class F>
void with_form(const InterleavedWeights& w, F&& f) {
  if (!with_form(w.form(), f)) fail("", "interleaved linear", "no vector kernels for this weight's form");
}

// block(std::integral_constant<int, rest>{}, ts) for a rest of 1..N tokens.
template <int N, class Block>
void rest_block(int64_t rest, int64_t ts, Block& block) {
  if constexpr (N > 0) {
    if (rest == N) block(std::integral_constant<int, N>{}, ts);
    else rest_block<N - 1>(rest, ts, block);
  }
}

// The terms of every token of the call, built once per thread for the rows
// and the weight's form: a Linear's row groups come in several calls (the
// pool's grains), each of which would otherwise build them again (7% of a
// 0.5B model's prefill). Its buffers are kept from call to call; the
// reference is valid until the thread's next call.
inline const TokenTerms& call_terms(const InterleavedWeights& w, const Int8Activations& acts) {
  thread_local TokenTerms terms;
  thread_local struct {
    uint64_t version = 0;
    int64_t cols = 0, block_cols = 0;
    int weight_offset = 0;
    bool offsets = false;
  } built;  // acts.block_cols is the version's
  if (acts.version == 0 || built.version != acts.version || built.cols != w.cols() ||
      built.block_cols != w.block_cols() || built.weight_offset != w.weight_offset() ||
      built.offsets != w.block_offsets()) {
    terms.build(w, acts, 0, acts.rows);
    built = {acts.version, w.cols(), w.block_cols(), w.weight_offset(), w.block_offsets()};
  }
  return terms;
}

// tile(std::integral_constant<int, RG>{}, std::integral_constant<int, TT>{}, g, block)
// for every block of RG row groups (from g_begin) and TT tokens (from
// t_begin): tokens in
// blocks of TMax (then one block of the rest), row groups RG = Chains / TT
// at a time (at least 1, at most RGMax; the rest one at a time), so about
// Chains accumulator chains run side by side; a lone token (decode, which
// reads the weights from memory) takes them one at a time, so that each
// thread reads one sequential stream (SmolLM2's decode lost 5-17% with 4-8
// groups in flight, as many streams a few kilobytes apart, against the lane
// kernels' one; in cache one group at a time costs 10-15%). Row groups go
// RGMax at a time through every token block of a tile, so each group's
// weights are read from memory once per tile and reused from L1 by the
// tile's other blocks (a verify call of 9 rows otherwise streamed a 168 MB
// head three times).
template <int TMax, int Chains, int RGMax, class Tile>
void interleaved_walk(const InterleavedWeights& w, const Int8Activations& acts, int64_t g_begin, int64_t g_end,
                      float* y, int64_t ldy, Tile&& tile, int64_t t_begin = 0) {
  const TokenTerms& terms = call_terms(w, acts);
  // TT tokens from ts over row groups [gs, ge).
  auto block = [&](auto tt, int64_t ts, int64_t gs, int64_t ge) {
    constexpr int TT = decltype(tt)::value;
    constexpr int RG = TT == 1 ? 1 : std::clamp(Chains / TT, 1, RGMax);
    TokenBlock<TT> tb;
    for (int i = 0; i < TT; ++i) {
      const int64_t t = ts + i;
      tb.q4[i] = reinterpret_cast<const int32_t*>(acts.q_row(t));
      tb.s[i] = terms.s.data() + t * terms.segments;
      tb.start[i] = terms.start.data() + t * terms.segments;
      tb.u[i] = terms.u.data() + t * terms.blocks;
      tb.y[i] = y + t * ldy;
    }
    int64_t g = gs;
    for (; g + RG <= ge; g += RG) tile(std::integral_constant<int, RG>{}, tt, g, tb);
    for (; g < ge; ++g) tile(std::integral_constant<int, 1>{}, tt, g, tb);
  };
  for (int64_t t0 = t_begin; t0 < acts.rows; t0 += kTokenTile) {
    const int64_t t1 = std::min(acts.rows, t0 + kTokenTile);
    const int64_t full_end = t0 + (t1 - t0) / TMax * TMax;
    for (int64_t gs = g_begin; gs < g_end; gs += RGMax) {
      const int64_t ge = std::min(g_end, gs + RGMax);
      for (int64_t ts = t0; ts < full_end; ts += TMax) block(std::integral_constant<int, TMax>{}, ts, gs, ge);
      auto rest = [&](auto tt, int64_t ts) { block(tt, ts, gs, ge); };
      rest_block<TMax - 1>(t1 - full_end, full_end, rest);
    }
  }
}

}  // namespace tessera::kernels

// Reference kernels: plain C++, f32 arithmetic, fixed summation order (dot.h).
// They define what every op computes; each optimized kernel is tested against
// its twin here. Row-major layouts throughout: activations are [rows, width],
// a linear layer's weight is [out_features, in_features] as in PyTorch.
#pragma once

#include <cstdint>

#include "core/weight_format.h"
#include <functional>

#include "core/model_spec.h"

namespace tessera::ref {

// out[t, :] = table[ids[t], :] * scale.  Throws Error for an id outside [0, vocab).
void embed(const float* table, int64_t vocab, int64_t width, const int32_t* ids, int64_t rows, float scale,
           float* out);

// RMSNorm of each row of `width` values:
//   y = x / sqrt(mean(x²) + eps) · w        (plus_one = false: Llama, Qwen)
//   y = x / sqrt(mean(x²) + eps) · (1 + w)  (plus_one = true: Gemma)
// w == nullptr means no weight (Gemma 4's v_norm). x and y may alias.
void rms_norm(const float* x, const float* w, int64_t rows, int64_t width, float eps, bool plus_one, float* y);

// y[t, n] = Σ_k x[t, k] · w[n, k] (+ bias[n]); rows [n_begin, n_end) of the
// output only, so callers can split the output features across threads and
// get the same bits whatever the split.
void linear(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, int64_t out,
            int64_t n_begin, int64_t n_end, float* y);

// linear() for a weight in any stored format: each weight row is decoded to
// f32 (decode_row) and then used exactly as linear() uses an f32 row, so the
// result is bit-identical to linear() on the decoded matrix.
void linear_any(const float* x, int64_t rows, int64_t in, const WeightView& w, const float* bias, int64_t out,
                int64_t n_begin, int64_t n_end, float* y);

// embed() from a table in any stored format (row ids[t] decoded, then scaled).
void embed_any(const WeightView& table, const int32_t* ids, int64_t rows, float scale, float* out);
// embed_any()'s steps with row ids[t] decoded by decode(id, dst) (a table kept
// in another layout, cpu/executor.cc): ids checked against vocab, rows scaled.
void embed_decoded(int64_t vocab, int64_t width, const int32_t* ids, int64_t rows, float scale, float* out,
                   const std::function<void(int64_t id, float* dst)>& decode);

// Rotary position embedding applied in place to `heads` heads of `head_dim`
// per row. cos/sin are [rows, rot_dim/2] for this row's position. Only the
// first rot_dim values of a head rotate (partial rotary). neox: pairs
// (i, i + rot_dim/2) as in HF's rotate_half; otherwise interleaved pairs
// (2i, 2i+1) as in the original GPT-J / llama.cpp "normal" mode.
void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t rot_dim, bool neox, const float* cos,
          const float* sin);

// The keys and values one attention op can see, in position order: `past`
// positions [past_begin, past_end) read from a cache laid out as
// [capacity][kv_heads · head_dim] with position p at slot p % capacity, then
// the chunk's own rows (positions past_end .. past_end + rows - 1).
//
// The cache holds f32 rows (past_k / past_v) or IEEE binary16 rows
// (past_k_f16 / past_v_f16 set instead: an f16 KV cache). Attention reads an
// f16 row as its exact f32 value, so it gives the bits it gives on an f32
// cache holding those values; the caller rounds the chunk's own rows to f16
// first (round_to_f16) so that a row gets the same bits whether it is read
// from the cache or from new_k / new_v — whatever the chunk split.
struct KvSpan {
  const float* past_k = nullptr;
  const float* past_v = nullptr;
  int64_t capacity = 0;
  int64_t past_begin = 0, past_end = 0;
  const float* new_k = nullptr;  // [rows][kv_heads · head_dim]
  const float* new_v = nullptr;
  const uint16_t* past_k_f16 = nullptr;  // an f16 cache: these instead of past_k / past_v
  const uint16_t* past_v_f16 = nullptr;
  // The cache's layout. 0, 0: token-major, cached row `slot` is one
  // [kv_heads · head_dim] row (as new_k). Else head-major, as KvCache keeps
  // it: head kvh's rows are contiguous, row `slot` of head kvh at
  // kvh · head_stride + slot · row_stride (row_stride = head_dim), so decode
  // attention reads each head's keys and values as one stream instead of a
  // head_dim piece of every row.
  int64_t row_stride = 0, head_stride = 0;

  // Where cached row `slot` of KV head kvh starts in past_k / past_v.
  int64_t past_at(int64_t slot, int64_t kvh, int64_t kv_width, int64_t head_dim) const {
    return row_stride ? slot * row_stride + kvh * head_stride : slot * kv_width + kvh * head_dim;
  }
  // Elements from a cached row of one head to the next slot's.
  int64_t past_row_step(int64_t kv_width) const { return row_stride ? row_stride : kv_width; }

  // Bidirectional blocks of the call (Gemma's image spans), per query row:
  // null, causal everywhere. Else row t also sees the call's later rows up
  // to, not including, row block_end[t] (t + 1 for a row in no block; the
  // block's end for each of its rows). A window still bounds what a row sees
  // below it, block or not: transformers' sliding mask is AND(window,
  // OR(causal, same block)). A block is contiguous and its rows share one
  // end, so both ends of the visible range still never decrease with t.
  const int32_t* block_end = nullptr;
};

struct AttentionShape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  int64_t window = 0;    // 0: full causal; else query at p sees keys p-window+1 .. p
  float scale = 1.0f;    // applied to q·k
  float softcap = 0.0f;  // 0: off; else s = softcap · tanh(s / softcap)
};

// The first key position query row t of a call sees: its window's start
// (window > 0) or 0, and never before what the cache still holds. Row t sees
// keys [first_visible_key(kv, window, t), visible_key_end(kv, t)): up to its
// own position (causal) or to its bidirectional block's end.
inline int64_t first_visible_key(const KvSpan& kv, int64_t window, int64_t t) {
  const int64_t pos = kv.past_end + t;
  const int64_t first = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
  return first > kv.past_begin ? first : kv.past_begin;
}
inline int64_t visible_key_end(const KvSpan& kv, int64_t t) {
  return kv.past_end + (kv.block_end ? kv.block_end[t] : t + 1);
}

// Causal grouped-query attention (bidirectional inside kv's blocks) for
// `rows` queries at positions past_end + t. q: [rows][heads · head_dim]; out likewise. Query head h reads
// KV head h / (heads / kv_heads). Heads [h_begin, h_end) of query rows
// [t_begin, t_end) only (the thread split; other outputs are not written).
// Scores, softmax and the weighted sum run in position order. Scores are
// dot_fma(q, k) (kernels/reference/dot.h) and the weighted sum accumulates
// with fma(p, v[i], acc[i]): fused multiply-adds, so the vector kernels'
// attention takes one instruction per term with these bits.
void attention(const float* q, int64_t rows, const KvSpan& kv, const AttentionShape& shape, int64_t h_begin,
               int64_t h_end, int64_t t_begin, int64_t t_end, float* out);

// x[i] = the f16 value nearest x[i] (ties to even; overflow to ±inf, NaN
// stays NaN), held as f32: what an f16 KV cache stores.
void round_to_f16(float* x, int64_t n);

// a[i] = act(gate[i]) · up[i] for n values (SiLU, GELU exact or with the tanh
// approximation, or sigmoid).
void gated_activation(Activation act, const float* gate, const float* up, int64_t n, float* out);

// y[i] += x[i]
void add_in_place(float* y, const float* x, int64_t n);

// x[i] = cap · tanh(x[i] / cap)
void softcap(float* x, int64_t n, float cap);

// Qwen3.5's conv1d over [q | k | v]: a depthwise causal convolution, then SiLU,
// for channels [c_begin, c_end):
//   y_t = silu(Σ_{j < kernel} w_j · x_{t-(kernel-1)+j})
// x: [rows][channels]; `past` (kernel-1 rows, oldest first, null before the
// sequence start), `weight` (tap-major) and the tap order as short_conv.
void causal_conv_silu(const float* x, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                      const float* const* past, int64_t c_begin, int64_t c_end, float* y);

// One position of the gated delta rule for one value head (Qwen3.5's linear
// attention; torch_recurrent_gated_delta_rule):
//   S ← decay · S;   m = Sᵀk;   δ = β · (v − m);   S ← S + k δᵀ;   o = Sᵀq
// S: [dk][dv] row-major; q, k: [dk]; v, o: [dv]; scratch: [dv]. q and o may
// be null (the state update alone, as a rollback replays it). Sums run over
// the key dimension in ascending order, each product rounded before its add
// (no FMA): the vector kernels give the same bits, so a state replayed with
// this kernel equals the state the forward pass left.
void delta_rule_step(float* S, const float* q, const float* k, const float* v, float decay, float beta, int64_t dk,
                     int64_t dv, float* scratch, float* o);

// Index of the largest value; the lowest index among equal maxima.
int64_t argmax(const float* x, int64_t n);

// LFM2's gated short convolution of one call (Lfm2ShortConv between in_proj
// and out_proj), for channels [c_begin, c_end):
//   row t of bcx = [B | C | x], each `channels` wide;  bx_t = B_t · x_t
//   y_t = C_t · Σ_{j < kernel} w_j · bx_{t-(kernel-1)+j}        (elementwise)
// bx of positions before the call come from `past` (kernel-1 rows, oldest
// first; null: before the sequence start, the tap is skipped, which changes
// no bits against conv1d's zero padding), the call's own from bx_out, which
// this writes ([rows][channels]). weight: tap-major [kernel][channels]. The
// taps are summed in order j = 0 .. kernel-1, every product rounded before
// its add (no FMA), so each output has one value whatever the call split.
void short_conv(const float* bcx, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                const float* const* past, int64_t c_begin, int64_t c_end, float* bx_out, float* y);

}  // namespace tessera::ref

// Everything a sequence carries from one call to the next, for every kind of
// layer: the one contract that sessions, prefix reuse and speculative
// decoding use, whatever the model's layers are.
//
//   layer kind              state                          memory
//   FullAttention           KV rows of every position      grows with the context
//   SlidingAttention        KV ring of window + margin     bounded
//   ShortConv (LFM2)        conv tail of kernel-1 + margin bounded
//   LinearAttention         conv tail, and per value head a bounded
//     (Qwen3.5)             [key_dim][value_dim] matrix with a checkpoint
//                           and a log of the last positions' updates
//   KV-sharing attention    nothing (reads an earlier layer's KV)
//
// Operations, all exact (the state after them is bit for bit the state a
// fresh run to that position would have, so a continued run computes the
// same bits):
//   length / advance   positions held; programs write a call's rows, then
//                      the session advances once all of them ran
//   can_truncate(n)    whether every layer can resume at position n <= length
//   truncate(n)        forget positions >= n (false and unchanged if not possible)
//   rollback(k)        truncate(length - k); always possible for k <= rollback_margin()
//   snapshot / restore a copy of the whole state, and putting one back
//   clear              back to position 0
//
// Bounded states (rings, conv tails) keep `rollback_margin` extra positions
// so that rolling back a few tokens (a rejected speculative draft) works
// after they have wrapped; going back further than that fails cleanly and the
// caller recomputes (a session reports it, never silently).
//
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "state/conv_state.h"
#include "state/kv_cache.h"
#include "state/recurrent_state.h"

namespace tessera {

// Positions a sequence can always roll back (speculative drafts of up to
// this many tokens are rejected without recomputation).
constexpr int64_t kDefaultRollbackMargin = 16;

class SequenceState {
 public:
  SequenceState(const ModelSpec& spec, int64_t context_length, KvType kv_type = KvType::F32,
                int64_t rollback_margin = kDefaultRollbackMargin);

  int64_t length() const { return kv_.length(); }
  int64_t context_length() const { return kv_.context_length(); }
  int64_t rollback_margin() const { return rollback_margin_; }
  void advance(int64_t rows) {
    kv_.advance(rows);
    recurrent_.commit(kv_.length());
  }

  bool can_truncate(int64_t n) const;
  bool truncate(int64_t n);
  bool rollback(int64_t k) { return k >= 0 && k <= length() && truncate(length() - k); }
  void clear();

  SequenceState snapshot() const { return *this; }
  // Throws Error if `s` belongs to another model shape or context length.
  void restore(const SequenceState& s);

  // Every layer's state as bytes, and back (state/session_file.h). load()
  // throws Error, leaving this state unchanged, when the data was not saved
  // from a state of this shape.
  void save(ByteWriter& w) const;
  void load(ByteReader& r);

  KvCache& kv() { return kv_; }
  const KvCache& kv() const { return kv_; }
  ConvState& conv() { return conv_; }
  const ConvState& conv() const { return conv_; }
  RecurrentState& recurrent() { return recurrent_; }
  const RecurrentState& recurrent() const { return recurrent_; }

  uint64_t bytes_allocated() const {
    return kv_.bytes_allocated() + conv_.bytes_allocated() + recurrent_.bytes_allocated();
  }
  // Bytes the state takes once `positions` are held, per layer (attention
  // KV, capped at the ring for sliding layers; conv tails): what `tessera
  // info` reports.
  uint64_t layer_bytes(int64_t layer, int64_t positions) const {
    return kv_.layer_bytes(layer, positions) + (conv_.has_layer(layer) ? conv_.layer_bytes(layer) : 0) +
           recurrent_.layer_bytes(layer);
  }
  int64_t num_layers() const { return num_layers_; }

 private:
  int64_t num_layers_ = 0;
  int64_t rollback_margin_ = 0;
  KvCache kv_;
  ConvState conv_;
  RecurrentState recurrent_;
};

}  // namespace tessera

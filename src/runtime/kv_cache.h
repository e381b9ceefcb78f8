// Per-layer keys and values of one session.
//
// Full-attention layers keep every position, growing their storage (doubling)
// up to the session's context length. Sliding-window layers keep a ring of
// `window` slots (position p lives in slot p % window), so their memory stays
// at the window size however long the context grows: a query at position p
// only sees p-window+1 .. p, and a call's own new keys are passed to attention
// directly (ref::KvSpan), so the ring never needs more than the window.
//
// A call runs attention over the cache plus its own rows, then KvStore writes
// those rows; the session advances length() once all programs of the call ran.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "kernels/reference/kernels.h"

namespace tessera {

class KvCache {
 public:
  KvCache(const ModelSpec& spec, int64_t context_length);

  int64_t length() const { return length_; }
  int64_t context_length() const { return context_length_; }

  // What attention of `layer` may read for a call starting at length(): the
  // cached positions still visible to its first query, plus the call's rows.
  ref::KvSpan span(int64_t layer, int64_t window, const float* new_k, const float* new_v) const;
  // Stores `rows` new positions starting at length() (only the last `window`
  // of them on a ring layer).
  void store(int64_t layer, const float* k, const float* v, int64_t rows);
  // Called by the session after every program of a call has run.
  void advance(int64_t rows) { length_ += rows; }

  // Forgets positions >= n. False (and nothing changed) when a ring layer no
  // longer holds the positions a query at n would need; the caller must then
  // clear() and recompute.
  bool truncate(int64_t n);
  void clear() { length_ = 0; }

  uint64_t bytes_allocated() const;
  // Slots a layer holds at most: the context length, or the window for rings.
  int64_t layer_capacity(int64_t layer) const { return layers_[layer].capacity; }

 private:
  struct Layer {
    int64_t width = 0;     // kv_heads · head_dim
    int64_t capacity = 0;  // max slots
    bool ring = false;
    std::vector<float> k, v;  // [allocated slots][width]
    std::vector<int64_t> slot_position;  // ring layers: the position each slot holds (-1: none)
  };
  int64_t length_ = 0;
  int64_t context_length_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace tessera

// Per-layer keys and values of one session.
//
// Full-attention layers keep every position, growing their storage (doubling)
// up to the session's context length. Sliding-window layers keep a ring of
// `window + rollback_margin` slots (position p lives in slot p % capacity), so
// their memory stays near the window size however long the context grows: a
// query at position p only sees p-window+1 .. p, and a call's own new keys are
// passed to attention directly (ref::KvSpan), so attention never needs more
// than the window. The margin's extra slots keep the positions that the last
// `rollback_margin` tokens overwrote: truncating by up to that many tokens
// (a speculative draft rejected, a turn's last tokens re-fed) still finds
// every key the next query needs, after the ring has wrapped.
//
// A call runs attention over the cache plus its own rows, then KvStore writes
// those rows; the session advances length() once all programs of the call ran.
//
// Each layer's storage is head-major: KV head h's rows are contiguous
// ([kv_heads][allocated slots][head_dim]; ref::KvSpan::head_stride), so
// decode attention, which reads one head's keys and values at a time, reads
// each as one sequential stream. Token-major rows would put a head's 256
// bytes (head_dim 64, f32) in every 768: streaming that from DRAM measured
// 2.2x slower (docs/BENCHMARKING.md). Growing re-lays the heads out.
//
// Rows are kept as f32 (KvType::F32, the default: exactly what the model
// computed) or as IEEE binary16 (KvType::F16: half the memory and half the
// bytes decode attention reads per cached position, as llama.cpp's default
// f16 cache). With F16 the executor rounds a call's own K/V rows to f16
// before attention reads them (ref::round_to_f16), so every row has one value
// whether read from the call or the cache: results still do not depend on the
// chunk split. store() then encodes exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/byte_stream.h"
#include "core/model_spec.h"
#include "kernels/reference/kernels.h"

namespace tessera {

enum class KvType { F32, F16 };

const char* kv_type_name(KvType t);
// Bytes one cached key or value takes: 4 (f32) or 2 (f16).
inline int64_t kv_element_bytes(KvType t) { return t == KvType::F16 ? 2 : 4; }
// "f32" or "f16"; throws Error naming the value otherwise.
KvType parse_kv_type(const std::string& name);

class KvCache {
 public:
  // rollback_margin: extra ring slots (see above); 0 keeps rings at the window.
  KvCache(const ModelSpec& spec, int64_t context_length, KvType type = KvType::F32, int64_t rollback_margin = 0);

  int64_t length() const { return length_; }
  int64_t context_length() const { return context_length_; }
  KvType type() const { return type_; }

  // What attention of `layer` may read for a call starting at length(): the
  // cached positions still visible to its first query, plus the call's rows.
  ref::KvSpan span(int64_t layer, int64_t window, const float* new_k, const float* new_v) const;
  // Stores `rows` new positions starting at length() (only the last `window`
  // of them on a ring layer).
  void store(int64_t layer, const float* k, const float* v, int64_t rows);
  // Called by the session after every program of a call has run.
  void advance(int64_t rows) { length_ += rows; }

  // Whether truncate(n) can succeed: n <= length() and every ring layer still
  // holds the positions a query at n would need (always, for n >= length() -
  // rollback_margin - 1).
  bool can_truncate(int64_t n) const;
  // Forgets positions >= n. False (and nothing changed) when !can_truncate(n);
  // the caller must then clear() and recompute.
  bool truncate(int64_t n);
  void clear() { length_ = 0; }

  uint64_t bytes_allocated() const;
  // Slots a layer holds at most: the context length, or window + margin for
  // rings; 0 for a layer without KV of its own (not attention, or sharing
  // an earlier layer's).
  int64_t layer_capacity(int64_t layer) const { return layers_[layer].capacity; }
  // Bytes a layer's keys and values take once `positions` are cached (what
  // bytes_allocated() reaches at most, before growth's slack).
  uint64_t layer_bytes(int64_t layer, int64_t positions) const;

  // The cached rows and their bookkeeping (state/session_file.h); load()
  // throws Error when the data does not fit this cache's shape.
  void save(ByteWriter& w) const;
  void load(ByteReader& r);

 private:
  struct Layer {
    int64_t kv_heads = 0, head_dim = 0;
    int64_t width = 0;     // kv_heads · head_dim
    int64_t capacity = 0;  // max slots
    int64_t window = 0;    // ring layers: the positions a query sees (capacity - margin)
    int64_t slots = 0;     // allocated slots (per head)
    bool ring = false;
    std::vector<float> k, v;           // F32: [kv heads][slots][head_dim]
    std::vector<uint16_t> k16, v16;    // F16: likewise, binary16 bits
    std::vector<int64_t> slot_position;  // ring layers: the position each slot holds (-1: none)
  };
  // The layer's storage as a span sees it (capacity and the head-major
  // strides; no data): span() fills in the rest, and store() writes where
  // its past_at() says attention reads.
  static ref::KvSpan layout(const Layer& L);
  template <class T>
  static void grow_heads(std::vector<T>& data, int64_t from, int64_t to, const Layer& L);

  int64_t length_ = 0;
  int64_t context_length_ = 0;
  KvType type_ = KvType::F32;
  std::vector<Layer> layers_;
};

}  // namespace tessera

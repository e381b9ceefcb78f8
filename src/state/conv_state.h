// Per-layer tails of causal convolutions: the inputs of the last positions
// that a depthwise causal convolution of `kernel` taps reads again at the
// next position. LFM2's short-convolution layers (LayerKind::ShortConv) keep
// kernel-1 rows of `hidden_size` channels, Qwen3.5's gated delta-net layers
// (LayerKind::LinearAttention) kernel-1 rows of their [q | k | v] channels.
//
// Each layer keeps a ring of (kernel-1) + rollback_margin rows: position p
// lives in slot p % capacity, and each slot remembers the position it holds.
// A convolution at positions >= n reads positions n-kernel+1 .. n-1, so the
// state can go back to any n whose rows are still in their slots: always for
// n >= length - rollback_margin (the rows the last margin tokens displaced
// are still there), and for any n before the ring first wrapped. This is the
// same contract as the KV cache's sliding rings (kv_cache.h), so sessions can
// roll back and reuse a prefix of either the same way.
//
// The sequence's length is owned by the caller (SequenceState): every call
// passes the position its first new row has.
#pragma once

#include <cstdint>
#include <vector>

#include "core/byte_stream.h"
#include "core/model_spec.h"

namespace tessera {

class ConvState {
 public:
  ConvState(const ModelSpec& spec, int64_t rollback_margin = 0);

  // Whether `layer` has a conv tail (its kind convolves).
  bool has_layer(int64_t layer) const { return layers_[layer].channels > 0; }
  int64_t channels(int64_t layer) const { return layers_[layer].channels; }
  int64_t kernel(int64_t layer) const { return layers_[layer].kernel; }

  // The kernel-1 input rows before position `first`, oldest first, into
  // `rows` (null for positions before 0). Every one must be held (any
  // position reachable by a successful truncate is).
  void past_rows(int64_t layer, int64_t first, const float** rows) const;
  // Remembers `count` input rows ([count][channels]) of positions first ...
  // (only the last `capacity` of them matter; earlier ones are skipped).
  void store(int64_t layer, int64_t first, const float* x, int64_t count);

  // Whether positions n-kernel+1 .. n-1 of every layer are held, i.e. the
  // state can continue at position n (n <= length).
  bool can_resume_at(int64_t n) const;
  void clear();
  uint64_t bytes_allocated() const;
  // Bytes of a layer's tail (0 for layers without one).
  uint64_t layer_bytes(int64_t layer) const;

  void save(ByteWriter& w) const;
  void load(ByteReader& r);  // Error when the data does not fit this model's layers

 private:
  struct Layer {
    int64_t channels = 0, kernel = 0, capacity = 0;
    std::vector<float> rows;              // [capacity][channels], allocated on first store
    std::vector<int64_t> slot_position;   // the position each slot holds (-1: none)
  };
  std::vector<Layer> layers_;
};

}  // namespace tessera

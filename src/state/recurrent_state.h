// Per-layer recurrent matrices of Qwen3.5's gated delta-net layers
// (LayerKind::LinearAttention): for each value head a [key_dim][value_dim]
// matrix S that every position updates (ref::delta_rule_step) and that
// summarizes the whole past — there are no per-position rows to cut, so going
// back to an earlier position needs that position's S.
//
// Checkpoint and log: each layer keeps S at a checkpoint position `base`
// and, for every position from base on, the inputs its update consumed
// (normalized k, v, decay, beta). truncate(n) for base <= n <= length
// rebuilds S by replaying the logged updates of base .. n-1 onto the
// checkpoint with the reference kernel, which the forward pass's vector
// kernels equal bit for bit: the state after a rollback is exactly the state a
// fresh run to n leaves. commit() moves the checkpoint forward (replaying
// onto it) once more than 2·margin positions are logged, keeping it at least
// `rollback_margin` positions back, so a rollback of up to the margin always
// succeeds, at the cost of one extra update per position and two matrices
// per layer.
#pragma once

#include <cstdint>
#include <vector>

#include "core/byte_stream.h"
#include "core/model_spec.h"

namespace tessera {

class RecurrentState {
 public:
  RecurrentState(const ModelSpec& spec, int64_t rollback_margin = 0);

  bool has_layer(int64_t layer) const { return !layers_[layer].S.empty(); }
  int64_t heads(int64_t layer) const { return layers_[layer].heads; }
  int64_t key_dim(int64_t layer) const { return layers_[layer].dk; }
  int64_t value_dim(int64_t layer) const { return layers_[layer].dv; }
  // The layer's matrices after positions < length: [heads][key_dim][value_dim].
  float* matrices(int64_t layer) { return layers_[layer].S.data(); }

  // Records the update inputs of `count` positions first ... of one layer,
  // after the forward pass applied them: k [count][heads][key_dim] (one row
  // per value head, normalized), v [count][heads][value_dim], decay and beta
  // [count][heads]. `first` must be the next position the log expects.
  void log(int64_t layer, int64_t first, const float* k, const float* v, const float* decay, const float* beta,
           int64_t count);

  // Whether S can be rebuilt for position n (n between the checkpoint and length).
  bool can_resume_at(int64_t n) const { return !any_ || n >= base_; }
  // Rebuilds every layer's S for position n (can_resume_at(n), n <= length).
  void truncate(int64_t n);
  // After the sequence reached `length`: moves the checkpoint up when the log
  // is longer than 2·margin positions.
  void commit(int64_t length);
  void clear();
  uint64_t bytes_allocated() const;
  // Bytes of a layer's matrices, checkpoint and a full log.
  uint64_t layer_bytes(int64_t layer) const;

  void save(ByteWriter& w) const;
  void load(ByteReader& r);  // Error when the data does not fit this model's layers

 private:
  struct Layer {
    int64_t heads = 0, dk = 0, dv = 0;
    std::vector<float> S, base_S;           // [heads][dk][dv]
    std::vector<float> k, v, decay, beta;   // the log: positions base_ .. base_ + logged() - 1
  };
  // Replays positions [base_, base_ + count) of the log onto `S` (a copy of base_S).
  void replay(Layer& L, std::vector<float>& S, int64_t count) const;

  // Positions in the log (every recurrent layer logs the same ones).
  int64_t logged() const;

  std::vector<Layer> layers_;
  int64_t margin_ = 0;
  bool any_ = false;    // some layer is recurrent (else every operation is a no-op)
  int64_t base_ = 0;    // checkpoint position
};

}  // namespace tessera

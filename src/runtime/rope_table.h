// RoPE cos/sin tables for the positions of a call, computed as transformers'
// rotary embedding classes compute them: inverse frequencies
// inv_freq[i] = 1 / base^(2i / rot_dim) in f32 (then adjusted by the scaling
// type: linear, llama3, yarn), angle = f32(position) · inv_freq[i] in f32,
// cos/sin of the f32 angle times the attention factor (yarn; 1 otherwise).
// The runtime passes the tables to programs as inputs "rope.cos"/"rope.sin"
// (global layers) and "rope_local.cos"/"rope_local.sin" (Gemma 3 local
// layers), each [rows, rot_dim/2].
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"

namespace tessera {

class RopeTable {
 public:
  // `context_length` is the model's max_position_embeddings (yarn reads it
  // when original_max_position_embeddings is absent). Throws Error for an
  // unsupported scaling type.
  RopeTable(const RopeSpec& spec, int64_t rot_dim, int64_t context_length);

  int64_t half() const { return static_cast<int64_t>(inv_freq_.size()); }
  const std::vector<float>& inv_freq() const { return inv_freq_; }
  float attention_factor() const { return attention_factor_; }

  // cos/sin: [rows][half()] for positions start .. start + rows - 1.
  void fill(int64_t start, int64_t rows, float* cos, float* sin) const;

 private:
  std::vector<float> inv_freq_;
  float attention_factor_ = 1.0f;
};

}  // namespace tessera

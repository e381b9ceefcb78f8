#include "state/conv_state.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace tessera {

ConvState::ConvState(const ModelSpec& spec, int64_t rollback_margin) {
  if (rollback_margin < 0) fail("options", "rollback margin", "must be >= 0, got {}", rollback_margin);
  layers_.resize(static_cast<size_t>(spec.num_layers));
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    Layer& L = layers_[l];
    if (spec.layer_types[l] == LayerKind::ShortConv) {
      L.channels = spec.hidden_size;
      L.kernel = spec.conv_kernel;
    } else if (spec.layer_types[l] == LayerKind::LinearAttention) {
      // Qwen3.5's conv1d runs over [q | k | v] before the delta rule.
      L.channels = 2 * spec.linear_num_key_heads * spec.linear_key_head_dim +
                   spec.linear_num_value_heads * spec.linear_value_head_dim;
      L.kernel = spec.linear_conv_kernel;
    } else {
      continue;
    }
    if (L.kernel < 1) fail(spec.source_architecture, "conv kernel", "must be at least 1, got {}", L.kernel);
    L.capacity = std::max<int64_t>(1, L.kernel - 1 + rollback_margin);
  }
}

void ConvState::past_rows(int64_t layer, int64_t first, const float** rows) const {
  const Layer& L = layers_[layer];
  for (int64_t i = 0; i < L.kernel - 1; ++i) {
    const int64_t p = first - (L.kernel - 1) + i;
    if (p < 0) {
      rows[i] = nullptr;
      continue;
    }
    const int64_t slot = p % L.capacity;
    if (L.slot_position.empty() || L.slot_position[slot] != p)
      fail("session", "conv state", "layer {} no longer holds position {}", layer, p);
    rows[i] = L.rows.data() + slot * L.channels;
  }
}

void ConvState::store(int64_t layer, int64_t first, const float* x, int64_t count) {
  Layer& L = layers_[layer];
  if (L.rows.empty()) {
    L.rows.assign(static_cast<size_t>(L.capacity * L.channels), 0.0f);
    L.slot_position.assign(static_cast<size_t>(L.capacity), -1);
  }
  for (int64_t t = std::max<int64_t>(0, count - L.capacity); t < count; ++t) {
    const int64_t p = first + t, slot = p % L.capacity;
    std::memcpy(L.rows.data() + slot * L.channels, x + t * L.channels, sizeof(float) * L.channels);
    L.slot_position[slot] = p;
  }
}

bool ConvState::can_resume_at(int64_t n) const {
  for (const Layer& L : layers_) {
    if (L.channels == 0) continue;
    for (int64_t p = std::max<int64_t>(0, n - (L.kernel - 1)); p < n; ++p)
      if (L.slot_position.empty() || L.slot_position[p % L.capacity] != p) return false;
  }
  return true;
}

void ConvState::clear() {
  for (Layer& L : layers_) std::fill(L.slot_position.begin(), L.slot_position.end(), -1);
}

uint64_t ConvState::bytes_allocated() const {
  uint64_t b = 0;
  for (const Layer& L : layers_) b += L.rows.capacity() * sizeof(float);
  return b;
}

uint64_t ConvState::layer_bytes(int64_t layer) const {
  const Layer& L = layers_[layer];
  return static_cast<uint64_t>(L.capacity * L.channels) * sizeof(float);
}

void ConvState::save(ByteWriter& w) const {
  w.put<int64_t>(static_cast<int64_t>(layers_.size()));
  for (const Layer& L : layers_) {
    w.put_vector(L.rows);
    w.put_vector(L.slot_position);
  }
}

void ConvState::load(ByteReader& r) {
  if (r.get<int64_t>() != static_cast<int64_t>(layers_.size()))
    fail("session file", "conv state", "does not fit this model's layers");
  std::vector<Layer> layers = layers_;
  for (Layer& L : layers) {
    L.rows = r.get_vector<float>();
    L.slot_position = r.get_vector<int64_t>();
    const bool empty = L.rows.empty() && L.slot_position.empty();
    if (!empty && (L.rows.size() != static_cast<size_t>(L.capacity * L.channels) ||
                   L.slot_position.size() != static_cast<size_t>(L.capacity)))
      fail("session file", "conv state", "a layer's tail does not match its shape");
  }
  layers_ = std::move(layers);
}

}  // namespace tessera

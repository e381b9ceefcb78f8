#include "state/recurrent_state.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/reference/kernels.h"

namespace tessera {

RecurrentState::RecurrentState(const ModelSpec& spec, int64_t rollback_margin) : margin_(rollback_margin) {
  if (rollback_margin < 0) fail("options", "rollback margin", "must be >= 0, got {}", rollback_margin);
  layers_.resize(static_cast<size_t>(spec.num_layers));
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    if (spec.layer_types[l] != LayerKind::LinearAttention) continue;
    Layer& L = layers_[l];
    L.heads = spec.linear_num_value_heads;
    L.dk = spec.linear_key_head_dim;
    L.dv = spec.linear_value_head_dim;
    if (L.heads < 1 || L.dk < 1 || L.dv < 1)
      fail(spec.source_architecture, "linear attention", "layer {} has {} value heads of {} x {}", l, L.heads, L.dk,
           L.dv);
    L.S.assign(static_cast<size_t>(L.heads * L.dk * L.dv), 0.0f);
    L.base_S = L.S;
    any_ = true;
  }
}

void RecurrentState::log(int64_t layer, int64_t first, const float* k, const float* v, const float* decay,
                         const float* beta, int64_t count) {
  Layer& L = layers_[layer];
  if (first != base_ + static_cast<int64_t>(L.decay.size()) / L.heads)
    fail("session", "recurrent state", "layer {} logs position {} out of order", layer, first);
  L.k.insert(L.k.end(), k, k + count * L.heads * L.dk);
  L.v.insert(L.v.end(), v, v + count * L.heads * L.dv);
  L.decay.insert(L.decay.end(), decay, decay + count * L.heads);
  L.beta.insert(L.beta.end(), beta, beta + count * L.heads);
}

void RecurrentState::replay(Layer& L, std::vector<float>& S, int64_t count) const {
  std::vector<float> scratch(static_cast<size_t>(L.dv));
  for (int64_t h = 0; h < L.heads; ++h) {
    float* Sh = S.data() + h * L.dk * L.dv;
    for (int64_t t = 0; t < count; ++t) {
      const int64_t i = t * L.heads + h;
      ref::delta_rule_step(Sh, nullptr, L.k.data() + i * L.dk, L.v.data() + i * L.dv, L.decay[i], L.beta[i], L.dk,
                           L.dv, scratch.data(), nullptr);
    }
  }
}

void RecurrentState::truncate(int64_t n) {
  if (!any_) return;
  if (n < base_) fail("session", "recurrent state", "position {} is before the checkpoint at {}", n, base_);
  for (Layer& L : layers_) {
    if (L.S.empty()) continue;
    const int64_t keep = n - base_;
    L.k.resize(static_cast<size_t>(keep * L.heads * L.dk));
    L.v.resize(static_cast<size_t>(keep * L.heads * L.dv));
    L.decay.resize(static_cast<size_t>(keep * L.heads));
    L.beta.resize(static_cast<size_t>(keep * L.heads));
    L.S = L.base_S;
    replay(L, L.S, keep);
  }
}

void RecurrentState::commit(int64_t length) {
  if (!any_) return;
  const int64_t logged = length - base_;
  if (logged <= 2 * margin_) return;
  const int64_t advance = logged - margin_;
  for (Layer& L : layers_) {
    if (L.S.empty()) continue;
    replay(L, L.base_S, advance);
    L.k.erase(L.k.begin(), L.k.begin() + advance * L.heads * L.dk);
    L.v.erase(L.v.begin(), L.v.begin() + advance * L.heads * L.dv);
    L.decay.erase(L.decay.begin(), L.decay.begin() + advance * L.heads);
    L.beta.erase(L.beta.begin(), L.beta.begin() + advance * L.heads);
  }
  base_ += advance;
}

void RecurrentState::clear() {
  for (Layer& L : layers_) {
    if (L.S.empty()) continue;
    std::fill(L.S.begin(), L.S.end(), 0.0f);
    std::fill(L.base_S.begin(), L.base_S.end(), 0.0f);
    L.k.clear();
    L.v.clear();
    L.decay.clear();
    L.beta.clear();
  }
  base_ = 0;
}

uint64_t RecurrentState::bytes_allocated() const {
  uint64_t b = 0;
  for (const Layer& L : layers_)
    b += (L.S.capacity() + L.base_S.capacity() + L.k.capacity() + L.v.capacity() + L.decay.capacity() +
          L.beta.capacity()) *
         sizeof(float);
  return b;
}

uint64_t RecurrentState::layer_bytes(int64_t layer) const {
  const Layer& L = layers_[layer];
  if (L.S.empty()) return 0;
  const uint64_t matrices = 2 * static_cast<uint64_t>(L.heads * L.dk * L.dv);
  const uint64_t log = static_cast<uint64_t>(2 * margin_ + 1) * L.heads * (L.dk + L.dv + 2);
  return (matrices + log) * sizeof(float);
}

int64_t RecurrentState::logged() const {
  for (const Layer& L : layers_)
    if (!L.S.empty()) return static_cast<int64_t>(L.decay.size()) / L.heads;
  return 0;
}

void RecurrentState::save(ByteWriter& w) const {
  w.put<int64_t>(base_);
  w.put<int64_t>(logged());
  w.put<int64_t>(static_cast<int64_t>(layers_.size()));
  for (const Layer& L : layers_) {
    w.put_vector(L.S);
    w.put_vector(L.base_S);
    w.put_vector(L.k);
    w.put_vector(L.v);
    w.put_vector(L.decay);
    w.put_vector(L.beta);
  }
}

void RecurrentState::load(ByteReader& r) {
  const int64_t base = r.get<int64_t>(), logged = r.get<int64_t>();
  if (base < 0 || logged < 0 || r.get<int64_t>() != static_cast<int64_t>(layers_.size()))
    fail("session file", "recurrent state", "does not fit this model's layers");
  std::vector<Layer> layers = layers_;
  for (Layer& L : layers) {
    const size_t matrices = L.S.size();
    L.S = r.get_vector<float>();
    L.base_S = r.get_vector<float>();
    L.k = r.get_vector<float>();
    L.v = r.get_vector<float>();
    L.decay = r.get_vector<float>();
    L.beta = r.get_vector<float>();
    const size_t n = static_cast<size_t>(logged * L.heads);
    if (L.S.size() != matrices || L.base_S.size() != matrices || L.decay.size() != n || L.beta.size() != n ||
        L.k.size() != n * static_cast<size_t>(L.dk) || L.v.size() != n * static_cast<size_t>(L.dv))
      fail("session file", "recurrent state", "a layer's matrices or log do not match its shape");
  }
  layers_ = std::move(layers);
  base_ = base;
}

}  // namespace tessera

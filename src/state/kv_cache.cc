#include "state/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace tessera {

const char* kv_type_name(KvType t) { return t == KvType::F16 ? "f16" : "f32"; }

KvType parse_kv_type(const std::string& name) {
  if (name == "f32") return KvType::F32;
  if (name == "f16") return KvType::F16;
  fail("options", "kv type", "must be f32 or f16, got '{}'", name);
}

KvCache::KvCache(const ModelSpec& spec, int64_t context_length, KvType type, int64_t rollback_margin)
    : context_length_(context_length), type_(type) {
  if (context_length < 1) fail("options", "context length", "must be positive, got {}", context_length);
  if (rollback_margin < 0) fail("options", "rollback margin", "must be >= 0, got {}", rollback_margin);
  layers_.resize(spec.num_layers);
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    Layer& L = layers_[l];
    const LayerKind kind = spec.layer_types[l];
    // Layers without attention, and attention layers that read an earlier
    // layer's keys and values (Gemma 4's KV sharing), hold nothing.
    if ((kind != LayerKind::FullAttention && kind != LayerKind::SlidingAttention) || layer_shares_kv(spec, l))
      continue;
    L.kv_heads = layer_num_kv_heads(spec, l);
    L.head_dim = layer_head_dim(spec, l);
    L.width = L.kv_heads * L.head_dim;
    const int64_t ring = spec.sliding_window + rollback_margin;
    L.ring = kind == LayerKind::SlidingAttention && ring < context_length;
    L.window = spec.sliding_window;
    L.capacity = L.ring ? ring : context_length;
  }
}

uint64_t KvCache::layer_bytes(int64_t layer, int64_t positions) const {
  const Layer& L = layers_[layer];
  return static_cast<uint64_t>(2 * std::min(positions, L.capacity) * L.width * kv_element_bytes(type_));
}

ref::KvSpan KvCache::layout(const Layer& L) {
  ref::KvSpan s;
  s.capacity = L.capacity;
  s.row_stride = L.head_dim;
  s.head_stride = L.slots * L.head_dim;
  return s;
}

ref::KvSpan KvCache::span(int64_t layer, int64_t window, const float* new_k, const float* new_v) const {
  const Layer& L = layers_[layer];
  ref::KvSpan s = layout(L);
  if (type_ == KvType::F16) {
    s.past_k_f16 = L.k16.data();
    s.past_v_f16 = L.v16.data();
  } else {
    s.past_k = L.k.data();
    s.past_v = L.v.data();
  }
  s.past_end = length_;
  s.past_begin = window > 0 ? std::max<int64_t>(0, length_ - window + 1) : 0;
  s.new_k = new_k;
  s.new_v = new_v;
  return s;
}

// Head-major storage of `from` slots per head re-laid out for `to` slots per
// head (to > from): each head's rows move to their new place, in one pass.
template <class T>
void KvCache::grow_heads(std::vector<T>& data, int64_t from, int64_t to, const Layer& L) {
  const int64_t hd = L.head_dim;
  std::vector<T> grown(static_cast<size_t>(to * L.width));
  for (int64_t h = 0; h < L.kv_heads && from > 0; ++h)
    std::copy_n(data.begin() + h * from * hd, from * hd, grown.begin() + h * to * hd);
  data = std::move(grown);
}

void KvCache::store(int64_t layer, const float* k, const float* v, int64_t rows) {
  Layer& L = layers_[layer];
  if (length_ + rows > context_length_)
    fail("session", "context", "{} tokens would exceed the context length {}", length_ + rows, context_length_);
  const int64_t needed = L.ring ? L.capacity : length_ + rows;
  const bool f16 = type_ == KvType::F16;
  if (needed > L.slots) {
    const int64_t slots =
        L.ring ? L.capacity : std::min(L.capacity, std::max(needed, std::max<int64_t>(64, L.slots * 2)));
    if (f16) {
      grow_heads(L.k16, L.slots, slots, L);
      grow_heads(L.v16, L.slots, slots, L);
    } else {
      grow_heads(L.k, L.slots, slots, L);
      grow_heads(L.v, L.slots, slots, L);
    }
    L.slots = slots;
    if (L.ring) L.slot_position.assign(static_cast<size_t>(slots), -1);
  }
  const int64_t hd = L.head_dim;
  const ref::KvSpan where = layout(L);
  const int64_t first = L.ring ? std::max<int64_t>(0, rows - L.capacity) : 0;
  for (int64_t t = first; t < rows; ++t) {
    const int64_t slot = (length_ + t) % L.capacity;
    for (int64_t h = 0; h < L.kv_heads; ++h) {
      const float* kt = k + t * L.width + h * hd;
      const float* vt = v + t * L.width + h * hd;
      const int64_t at = where.past_at(slot, h, L.width, hd);
      if (f16) {
        for (int64_t i = 0; i < hd; ++i) {
          L.k16[at + i] = f32_to_f16(kt[i]);
          L.v16[at + i] = f32_to_f16(vt[i]);
        }
      } else {
        std::memcpy(&L.k[at], kt, sizeof(float) * hd);
        std::memcpy(&L.v[at], vt, sizeof(float) * hd);
      }
    }
    if (L.ring) L.slot_position[slot] = length_ + t;
  }
}

bool KvCache::can_truncate(int64_t n) const {
  if (n < 0 || n > length_) return false;
  for (const Layer& L : layers_) {
    if (!L.ring || n == length_) continue;
    // A query at n needs positions n-window+1 .. n-1 in their slots; later
    // positions (now being forgotten) may have overwritten some of them.
    for (int64_t p = std::max<int64_t>(0, n - L.window + 1); p < n; ++p)
      if (L.slot_position[p % L.capacity] != p) return false;
  }
  return true;
}

bool KvCache::truncate(int64_t n) {
  if (!can_truncate(n)) return false;
  length_ = n;
  return true;
}

uint64_t KvCache::bytes_allocated() const {
  uint64_t b = 0;
  for (const Layer& L : layers_)
    b += (L.k.capacity() + L.v.capacity()) * sizeof(float) + (L.k16.capacity() + L.v16.capacity()) * sizeof(uint16_t);
  return b;
}

void KvCache::save(ByteWriter& w) const {
  w.put<int64_t>(length_);
  w.put<int64_t>(static_cast<int64_t>(layers_.size()));
  for (const Layer& L : layers_) {
    w.put<int64_t>(L.capacity);
    w.put<int64_t>(L.width);
    w.put<int64_t>(L.slots);
    w.put_vector(L.k);
    w.put_vector(L.v);
    w.put_vector(L.k16);
    w.put_vector(L.v16);
    w.put_vector(L.slot_position);
  }
}

void KvCache::load(ByteReader& r) {
  const int64_t length = r.get<int64_t>();
  if (length < 0 || length > context_length_ || r.get<int64_t>() != static_cast<int64_t>(layers_.size()))
    fail("session file", "KV cache", "does not fit this model's layers and context");
  std::vector<Layer> layers = layers_;
  for (Layer& L : layers) {
    const int64_t capacity = r.get<int64_t>(), width = r.get<int64_t>(), slots = r.get<int64_t>();
    if (capacity != L.capacity || width != L.width || slots < 0 || slots > L.capacity)
      fail("session file", "KV cache", "a layer's shape differs from this model's");
    L.slots = slots;
    L.k = r.get_vector<float>();
    L.v = r.get_vector<float>();
    L.k16 = r.get_vector<uint16_t>();
    L.v16 = r.get_vector<uint16_t>();
    L.slot_position = r.get_vector<int64_t>();
    const size_t n = static_cast<size_t>(slots * L.width);
    const bool f16 = type_ == KvType::F16;
    if ((f16 ? L.k16.size() : L.k.size()) != n || (f16 ? L.v16.size() : L.v.size()) != n ||
        (f16 ? !L.k.empty() : !L.k16.empty()) ||
        (L.ring && slots > 0 && L.slot_position.size() != static_cast<size_t>(slots)))
      fail("session file", "KV cache", "a layer's rows do not match its slots");
  }
  layers_ = std::move(layers);
  length_ = length;
}

}  // namespace tessera

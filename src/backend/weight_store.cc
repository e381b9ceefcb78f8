#include "backend/weight_store.h"

#include "core/error.h"

namespace tessera {

const WeightView* WeightStore::find(const std::string& name) const {
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : &it->second;
}

const WeightView& WeightStore::get(const std::string& name) const {
  const WeightView* v = find(name);
  if (!v) fail(origin, name, "weight not loaded");
  return *v;
}

const F32Tensor* WeightStore::find_f32(const std::string& name) const {
  auto it = owned_.find(name);
  return it == owned_.end() ? nullptr : &it->second;
}

void WeightStore::put(std::string name, F32Tensor t) {
  F32Tensor& stored = owned_[name] = std::move(t);
  WeightView v;
  v.format = WeightFormat::F32;
  v.shape = stored.shape;
  v.data = stored.data.data();
  views_[std::move(name)] = std::move(v);
}

void WeightStore::put_view(std::string name, WeightView v) { views_[std::move(name)] = std::move(v); }

uint64_t WeightStore::bytes() const {
  uint64_t n = 0;
  for (const auto& [name, v] : views_) n += weight_view_bytes(v);
  return n;
}

}  // namespace tessera

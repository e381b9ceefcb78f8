// The weights a model's programs read, by HF parameter name, each as a
// WeightView (core/weight_format.h): either f32 tensors the store owns
// (models loaded straight from GGUF / safetensors) or views into a mapped
// bundle file that `keep_alive` holds open.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/weight_format.h"
#include "sources/weight_loader.h"

namespace tessera {

class WeightStore {
 public:
  // Throws Error naming the weight when absent.
  const WeightView& get(const std::string& name) const;
  const WeightView* find(const std::string& name) const;
  // The f32 tensor the store owns under `name`, or null.
  const F32Tensor* find_f32(const std::string& name) const;

  void put(std::string name, F32Tensor t);
  void put_view(std::string name, WeightView v);
  const std::map<std::string, WeightView>& all() const { return views_; }
  // Bytes of every section of every weight.
  uint64_t bytes() const;

  std::string origin;  // the source path, for error messages
  std::vector<std::shared_ptr<const void>> keep_alive;

 private:
  std::map<std::string, F32Tensor> owned_;
  std::map<std::string, WeightView> views_;
};

}  // namespace tessera

// Test fixtures shared by the linear-kernel tests: random stored weights as
// the converter writes them, activations with an outlier channel.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "bundle/weight_format.h"

namespace tessera::kernels::test_fixtures {

// A random stored weight (lut4 or int8) and its buffers.
struct RandomWeight {
  std::vector<uint8_t> data;
  std::vector<float> scales, palette;
  WeightView view;

  RandomWeight(std::mt19937& rng, WeightFormat f, int64_t rows, int64_t cols, int64_t group) {
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f), pos(0.01f, 2.0f);
    data.resize(weight_data_bytes(f, rows, cols));
    for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
    if (f == WeightFormat::Int8)
      for (uint8_t& b : data) b = b == 0x80 ? 0x81 : b;  // q ∈ [-127, 127] as the converter writes
    scales.resize(rows);
    for (float& s : scales) s = pos(rng);
    view.format = f;
    view.shape = {rows, cols};
    view.data = data.data();
    view.scales = scales.data();
    if (f == WeightFormat::Lut4) {
      palette.resize(rows / group * 16);
      for (float& p : palette) p = u(rng);
      view.palette = palette.data();
      view.group_size = group;
    }
  }
};

inline std::vector<float> random_acts(std::mt19937& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = d(rng);
  // An outlier channel and an all-zero block, as real activations have.
  for (int64_t t = 0; t < rows; ++t) {
    x[t * cols + cols / 3] *= 40.0f;
    if (cols >= 128)
      for (int64_t c = 64; c < 128; ++c) x[t * cols + c] = 0.0f;
  }
  return x;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace tessera::kernels::test_fixtures

#include "runtime/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tessera {

RopeTable::RopeTable(const RopeSpec& spec, int64_t rot_dim, int64_t context_length) {
  const int64_t half = rot_dim / 2;
  const float dim = static_cast<float>(rot_dim);
  const float base = static_cast<float>(spec.theta);
  std::vector<float> pos_freq(half);  // base^(2i/dim)
  for (int64_t i = 0; i < half; ++i) pos_freq[i] = std::pow(base, static_cast<float>(2 * i) / dim);
  inv_freq_.resize(half);
  for (int64_t i = 0; i < half; ++i) inv_freq_[i] = 1.0f / pos_freq[i];

  const RopeScaling& sc = spec.scaling;
  const float factor = static_cast<float>(sc.factor);
  if (sc.type == "default") {
    // nothing
  } else if (sc.type == "proportional") {
    // _compute_proportional_rope_parameters: the first int(prf · rot_dim / 2)
    // pairs turn at θ^(-2i/rot_dim) (rot_dim: the whole head), the rest not at
    // all; every frequency divided by the factor.
    const auto turning = static_cast<int64_t>(spec.partial_rotary_factor * static_cast<double>(rot_dim) / 2.0);
    for (int64_t i = 0; i < half; ++i) inv_freq_[i] = i < turning ? inv_freq_[i] / factor : 0.0f;
  } else if (sc.type == "linear") {
    for (float& f : inv_freq_) f = f / factor;
  } else if (sc.type == "llama3") {
    const float old_ctx = static_cast<float>(sc.original_max_position_embeddings);
    const float low = static_cast<float>(sc.low_freq_factor), high = static_cast<float>(sc.high_freq_factor);
    const float low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
    for (float& f : inv_freq_) {
      const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
      float g = wavelen > low_wavelen ? f / factor : f;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      if (medium) {
        const float smooth = (old_ctx / wavelen - low) / (high - low);
        g = (1.0f - smooth) * g / factor + smooth * g;
      }
      f = g;
    }
  } else if (sc.type == "yarn") {
    const double max_pos = static_cast<double>(sc.original_max_position_embeddings > 0 ? sc.original_max_position_embeddings
                                                                                     : context_length);
    auto correction_dim = [&](double rotations) {
      return (rot_dim * std::log(max_pos / (rotations * 2 * std::numbers::pi))) / (2 * std::log(spec.theta));
    };
    double lo = std::max(0.0, std::floor(correction_dim(sc.beta_fast)));
    double hi = std::min(static_cast<double>(rot_dim - 1), std::ceil(correction_dim(sc.beta_slow)));
    if (lo == hi) hi += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      const float ramp = static_cast<float>(std::clamp((static_cast<double>(i) - lo) / (hi - lo), 0.0, 1.0));
      const float extrapolation = 1.0f - ramp;
      const float interp = 1.0f / (factor * pos_freq[i]);
      inv_freq_[i] = interp * (1.0f - extrapolation) + inv_freq_[i] * extrapolation;
    }
    attention_factor_ = sc.attention_factor ? static_cast<float>(*sc.attention_factor)
                        : factor > 1 ? static_cast<float>(0.1 * std::log(sc.factor) + 1.0)
                                     : 1.0f;
  } else {
    fail("model", "rope_scaling", "RoPE scaling type '{}' is not supported", sc.type);
  }
}

void RopeTable::fill(int64_t start, int64_t rows, float* cos, float* sin) const {
  const int64_t h = half();
  for (int64_t t = 0; t < rows; ++t) {
    const float pos = static_cast<float>(start + t);
    for (int64_t i = 0; i < h; ++i) {
      const float angle = pos * inv_freq_[i];
      cos[t * h + i] = std::cos(angle) * attention_factor_;
      sin[t * h + i] = std::sin(angle) * attention_factor_;
    }
  }
}

}  // namespace tessera

// Gemma 3's image encoder on Tessera's vector kernels: the math of the plain
// reference (media/gemma3_vision.h) with its linears on the FMA GEMM
// (kernels/float_gemm.h: f32 weights, tokens split over a thread pool), its
// attention head by head as two GEMMs (Q Kᵀ, a softmax along each row in
// f32 with a double sum, then P V), LayerNorm and GELU in f32.
//
// Not the reference's bits: the reference sums in double, these kernels in
// f32 lanes. Agreement is checked in tests (media/gemma3_vision_encoder_test
// and tests/python/test_gemma3_images.py) against the reference and
// transformers within a tolerance.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "media/gemma3_vision.h"

namespace tessera {

class Gemma3VisionEncoder {
 public:
  // `threads` 0: the machine's physical cores.
  explicit Gemma3VisionEncoder(std::shared_ptr<const Gemma3VisionReference> weights, int threads = 0);

  const Gemma3VisionConfig& config() const { return weights_->config(); }
  // The image's soft tokens, [tokens_per_image][text_hidden], as the
  // reference's image_features.
  std::vector<float> image_features(const PixelValues& pixels) const;

 private:
  // y[t][o] = x[t] · W[o] + b[o] for t < rows, o < out (w: [out][in]).
  void linear(const std::vector<float>& w, const std::vector<float>* bias, int64_t out, int64_t in, const float* x,
              int64_t rows, float* y) const;

  std::shared_ptr<const Gemma3VisionReference> weights_;
  std::vector<float> projection_t_;  // [text_hidden][hidden]: the projection as a linear's rows
  mutable std::unique_ptr<ThreadPool> pool_;
};

}  // namespace tessera

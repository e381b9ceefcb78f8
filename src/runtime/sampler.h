// Next-token choice from logits.
//
// temperature 0 is greedy (argmax, lowest id on ties). Otherwise, in this
// order (llama.cpp's default chain, with the temperature before the filters
// as transformers' generate() applies it):
//   1. repetition penalty over the last `repeat_last_n` tokens of the
//      context, each distinct token once: l > 0 ? l / p : l · p (CTRL / HF);
//   2. l / temperature;
//   3. top-k: keep the k largest (ties at the boundary broken by lower id);
//   4. softmax, then top-p: keep the smallest prefix (by probability, then
//      id) whose mass reaches p;
//   5. min-p: drop tokens with probability < min_p · max probability;
//   6. draw one token with probability proportional to what is left.
// The draw uses std::mt19937_64 (its output sequence is fixed by the C++
// standard) turned into a double in [0, 1) with our own arithmetic, so the same
// seed gives the same tokens on every platform and for any thread count.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace tessera {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int64_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int64_t repeat_last_n = 64;   // -1: the whole context
  uint64_t seed = 0;

  // Throws Error naming the first parameter out of range.
  void validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // `context`: every token so far (prompt + generated), for the penalty.
  int32_t sample(const float* logits, int64_t vocab, std::span<const int32_t> context);
  // True when sample() returns the logits' argmax whatever they are
  // (temperature 0 and no repetition penalty in effect): the caller may
  // take the programs' own argmax (Session::greedy_ids) instead.
  bool picks_argmax(std::span<const int32_t> context) const;

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace tessera

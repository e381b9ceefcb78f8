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
  const SamplingParams& params() const { return p_; }

  // `context`: every token so far (prompt + generated), for the penalty.
  int32_t sample(const float* logits, int64_t vocab, std::span<const int32_t> context);
  // The distribution sample() draws from for these logits: the tokens left
  // after steps 1-5 with their probabilities (summing to 1), most likely
  // first; at temperature 0 the one token sample() returns, with 1. Valid
  // until the next call. Speculative sampling (generation/speculative.h) reads it.
  const std::vector<std::pair<int32_t, double>>& distribution(const float* logits, int64_t vocab,
                                                              std::span<const int32_t> context);
  // The next draw of the generator as a double in [0, 1) (53 bits), the
  // number sample() draws with.
  double uniform();
  // True when sample() returns the logits' argmax whatever they are
  // (temperature 0 and no repetition penalty in effect): the caller may
  // take the programs' own argmax (Session::greedy_ids) instead.
  bool picks_argmax(std::span<const int32_t> context) const;

 private:
  // Steps 1-5 for temperature > 0: cand_[0, keep), sorted, with
  // probabilities prob_[0, keep) (the softmax after top-k, so they sum to
  // at most 1 once top-p / min-p cut); returns keep.
  size_t filter(const float* logits, int64_t vocab, std::span<const int32_t> context);
  // Temperature 0: the (penalized) argmax.
  int32_t argmax(const float* logits, int64_t vocab, std::span<const int32_t> context) const;

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
  std::vector<double> prob_;
  std::vector<std::pair<int32_t, double>> dist_;
};

}  // namespace tessera

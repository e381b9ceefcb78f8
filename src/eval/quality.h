// Quality of a (quantized) model against a reference on one token sequence,
// both teacher-forced over the same ids: per-layer cosine of the residual
// stream, next-token top-1 agreement, KL(ref || test), perplexity of each and
// the cosine of the final logits. Used by `tessera quality`.
//
// Both models should be loaded with LoadOptions.chunks = num_layers so that
// every layer's output is observable (Session::on_chunk_output); with fewer
// chunks only the chunk boundaries are measured. The last chunk outputs
// logits, not x, so the last layer's residual is covered by the logit
// metrics only.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model.h"

namespace tessera {

struct LayerCosine {
  int64_t layer = 0;         // last decoder layer of the chunk (the residual after it)
  double mean_cosine = 0.0;  // over every position
  double min_cosine = 0.0;   // the worst single position
};

struct QualityReport {
  int64_t tokens = 0;       // positions run
  int64_t predictions = 0;  // next-token predictions scored (tokens - 1)
  int64_t window = 0;       // tokens per window (a fresh Session each)
  int64_t windows = 0;
  std::vector<LayerCosine> layers;  // one per non-last chunk, in order
  double top1_agreement = 0.0;      // argmax(test) == argmax(ref), over all positions
  double kl_mean = 0.0;             // mean over all positions of KL(ref || test), nats
  double kl_max = 0.0;
  double logits_cosine_mean = 0.0;  // per-position cosine of the final logits
  double logits_cosine_min = 0.0;
  double nll_test = 0.0, nll_ref = 0.0;  // mean next-token NLL, nats
  double ppl_test = 0.0, ppl_ref = 0.0;  // exp(nll)
  double test_top1_accuracy = 0.0, ref_top1_accuracy = 0.0;  // argmax == the next token

  nlohmann::ordered_json to_json() const;
};

// Throws Error when the two models' vocab sizes, layer counts, hidden sizes
// or chunk counts differ, when tokens has fewer than 2 ids or window < 2.
QualityReport measure_quality(const Model& test, const Model& ref, const std::vector<int32_t>& tokens,
                              int64_t window);

}  // namespace tessera

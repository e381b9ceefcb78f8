// Perplexity and KL divergence as llama.cpp's llama-perplexity computes
// them (tools/perplexity/perplexity.cpp: perplexity() and kl_divergence()),
// so that its figures and Tessera's can be set side by side, and one
// base-logits file (eval/kld_base_file.h) judges both runtimes.
//
// The protocol, as llama-perplexity runs it:
//   * the text is tokenized whole, with the tokenizer's special tokens
//     (BOS where it adds one; special-token text in the file is not parsed
//     as special tokens by llama.cpp: Tessera's tokenizer does match it, so
//     texts holding such strings can tokenize differently);
//   * it is cut into n_chunk = min(--chunks, tokens / n_ctx) chunks of
//     n_ctx tokens (the rest dropped); at least 2 * n_ctx tokens are required;
//   * each chunk runs in a fresh context (llama.cpp clears its KV cache; here
//     a new Session), its first token replaced by BOS when the tokenizer adds
//     BOS (the stored tokens keep the original one);
//   * only the second half of each chunk is scored: the logits at positions
//     first = n_ctx/2 ... n_ctx-2 against the next token, n_ctx - 1 - first
//     predictions per chunk;
//   * PPL = exp(mean NLL), and its uncertainty exp(mean) * sd / sqrt(count - 1).
// With a base file the tokens are the file's, n_ctx and the chunk count
// too, and every statistic of llama.cpp's kl_divergence() is computed from
// this model's logits and the file's compressed base log-probabilities, with
// the same float / double roundings.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model.h"

namespace tessera {

struct PerplexityOptions {
  int64_t n_ctx = 512;
  int64_t max_chunks = -1;  // < 0: every whole chunk of the text (or the base file)
  // Perplexity mode: when set, write the base-logits file there.
  std::string write_base;
  // Called after each chunk with the running figures (1-based chunk number).
  std::function<void(int64_t chunk, int64_t n_chunk, const struct PerplexityReport& running)> on_chunk;
};

// A value with llama.cpp's uncertainty.
struct Estimate {
  double value = 0.0;
  double err = 0.0;
};

// Order statistics of llama.cpp's summary (its `percentile` interpolation).
struct Percentiles {
  double max = 0.0, p99_9 = 0.0, p99 = 0.0, p95 = 0.0, p90 = 0.0, p75 = 0.0, median = 0.0, p25 = 0.0,
         p10 = 0.0, p5 = 0.0, p1 = 0.0, p0_1 = 0.0, min = 0.0;
};

struct PerplexityReport {
  int64_t n_ctx = 0;
  int64_t chunks = 0;
  int64_t count = 0;  // predictions scored
  std::optional<int32_t> bos;  // the id put at the start of each chunk, if any
  Estimate ppl;                // PPL(Q): this model's

  // Set when compared with a base file (compare_with_base).
  bool compared = false;
  Estimate base_ppl;            // from the base file's log-probs
  double ln_ppl_correlation = 0.0;  // Cor(ln PPL(Q), ln PPL(base))
  Estimate ln_ppl_ratio;        // mean ln(PPL(Q)/PPL(base))
  Estimate ppl_ratio;           // PPL(Q)/PPL(base)
  Estimate ppl_diff;            // PPL(Q) - PPL(base)
  Estimate kld;                 // mean KL(base || Q), nats
  Percentiles kld_percentiles;
  Estimate delta_p;             // mean of p(Q) - p(base) of the right token
  Percentiles delta_p_percentiles;
  Estimate delta_p_rms;
  Estimate same_top_p;          // fraction of positions where both argmaxes agree

  nlohmann::ordered_json to_json() const;
};

// llama-perplexity without --kl-divergence over `tokens` (the whole text,
// tokenized with special tokens). Throws Error when n_ctx < 8, n_ctx exceeds
// the model's context, or the tokens are fewer than 2 * n_ctx.
PerplexityReport compute_perplexity(const Model& model, const std::vector<int32_t>& tokens,
                                    const PerplexityOptions& options);

// llama-perplexity --kl-divergence: the tokens, n_ctx and chunk count of
// the base file at `base_path` (options.n_ctx is not used; max_chunks, when
// >= 0, keeps that many of its chunks). Throws Error for a file that cannot
// be read (eval/kld_base_file.h), a vocabulary size other than the model's,
// an n_ctx the model cannot run, or a token outside the vocabulary.
PerplexityReport compare_with_base(const Model& model, const std::string& base_path,
                                   const PerplexityOptions& options);

// The BOS id llama-perplexity puts at the start of every chunk: the
// tokenizer's BOS when encoding with special tokens adds it; none without a
// tokenizer.
std::optional<int32_t> chunk_bos(const Model& model);

}  // namespace tessera

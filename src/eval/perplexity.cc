#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "core/error.h"
#include "eval/kld_base_file.h"
#include "runtime/session.h"
#include "core/thread_pool.h"

namespace tessera {

namespace {

// Scored rows per forward call: bounds the logits buffer (64 rows of Gemma
// 3's 262,144 logits are 64 MiB) while keeping calls long enough for the
// prefill kernels.
constexpr int64_t kRowsPerCall = 64;

void check_n_ctx(const Model& model, int64_t n_ctx, std::string_view where) {
  if (n_ctx < 8) fail(where, "n_ctx", "must be at least 8, got {}", n_ctx);
  const int64_t limit = model.spec().context_length;
  if (limit > 0 && n_ctx > limit)
    fail(where, "n_ctx", "{} is more than the model's context length {}", n_ctx, limit);
}

// Runs one chunk in a fresh Session (llama.cpp clears its KV cache per
// chunk) and hands the logits of positions first = n_ctx/2 ... n_ctx-2 to
// score(row, logits, rows), row counting from 0 at `first`, in blocks of
// at most kRowsPerCall rows. The chunk's last token is only ever a target,
// so it is never run.
template <class Score>
void run_chunk(const Model& model, std::span<const int32_t> chunk, std::optional<int32_t> bos, Score&& score) {
  const int64_t n_ctx = static_cast<int64_t>(chunk.size());
  const int64_t first = n_ctx / 2;
  const int64_t rows = kld_rows_per_chunk(n_ctx);
  std::vector<int32_t> ids(chunk.begin(), chunk.end() - 1);
  if (bos) ids[0] = *bos;
  Session session(model, n_ctx);
  session.forward(std::span<const int32_t>(ids.data(), static_cast<size_t>(first)), LogitsWanted::Last);
  // Near-equal blocks, so that no short tail call takes another kernel path.
  const int64_t blocks = (rows + kRowsPerCall - 1) / kRowsPerCall;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = rows * b / blocks, end = rows * (b + 1) / blocks;
    const std::vector<float>& logits = session.forward(
        std::span<const int32_t>(ids.data() + first + begin, static_cast<size_t>(end - begin)), LogitsWanted::All);
    score(begin, logits.data(), end - begin);
  }
}

// llama.cpp's mean_and_uncertainty: the mean of count values from their sum
// and sum of squares, and the standard error sqrt(var / (count - 1)) (0
// for 10 values or fewer, or a variance that rounding made <= 0).
Estimate mean_and_uncertainty(double sum, double sum2, int64_t count) {
  if (count < 1) return {};
  const double mean = sum / static_cast<double>(count);
  const double var = sum2 / static_cast<double>(count) - mean * mean;
  return {mean, var > 0 && count > 10 ? std::sqrt(var / static_cast<double>(count - 1)) : 0.0};
}

// The covariance of the two means (0 under 10 values).
double covariance(double sum_a, double sum_b, double sum_ab, int64_t count) {
  if (count < 10) return 0.0;
  const double n = static_cast<double>(count);
  return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1);
}

// llama.cpp's interpolated percentile of sorted values, in float as it computes it.
float percentile(const std::vector<float>& sorted, float fraction) {
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  float p = fraction * static_cast<float>(sorted.size() - 1);
  const size_t ip = static_cast<size_t>(p);
  p -= static_cast<float>(ip);
  return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

Percentiles percentiles_of(std::vector<float>& values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  Percentiles p;
  p.max = values.back();
  p.min = values.front();
  p.median = n % 2 == 0 ? 0.5f * (values[n / 2] + values[n / 2 - 1]) : values[n / 2];
  p.p99_9 = percentile(values, 0.999f);
  p.p99 = percentile(values, 0.990f);
  p.p95 = percentile(values, 0.950f);
  p.p90 = percentile(values, 0.900f);
  p.p75 = percentile(values, 0.750f);
  p.p25 = percentile(values, 0.250f);
  p.p10 = percentile(values, 0.100f);
  p.p5 = percentile(values, 0.050f);
  p.p1 = percentile(values, 0.010f);
  p.p0_1 = percentile(values, 0.001f);
  return p;
}

// ---- perplexity ----

// -log softmax(l)[target] as llama.cpp's plain perplexity pass computes it:
// float max and exp, double sum, (l_t - max) in float less the double log.
double plain_nll(const float* l, int64_t n, int32_t target) {
  float max_logit = l[0];
  for (int64_t i = 1; i < n; ++i) max_logit = std::max(max_logit, l[i]);
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_exp += std::exp(l[i] - max_logit);
  return -((l[target] - max_logit) - std::log(sum_exp));
}

// PPL = exp(mean), uncertainty exp(mean) * sqrt((mean of squares - mean^2) / (count - 1)).
Estimate ppl_of(double nll, double nll2, int64_t count) {
  const double mean = nll / static_cast<double>(count);
  const double var = nll2 / static_cast<double>(count) - mean * mean;
  const double ppl = std::exp(mean);
  return {ppl, var > 0 && count > 1 ? std::sqrt(var / static_cast<double>(count - 1)) * ppl : 0.0};
}

// ---- KL divergence ----

// One scored position against its base row (llama.cpp's log_softmax over
// a base row), each quantity in the precision llama.cpp keeps it.
struct RowKld {
  float nll = 0, nll_base = 0;  // -log p(target) of this model and of the base
  double kld = 0;                // KL(base || this model) at this position
  float p_diff = 0;              // p(target) - p_base(target)
  bool same_top = false;         // argmax of the logits == argmax of the base row
};

RowKld row_kld(const float* l, int64_t n, const uint16_t* base_row, int32_t target) {
  float max_logit = l[0];
  int64_t imax = 0;
  for (int64_t i = 1; i < n; ++i)
    if (l[i] > max_logit) {
      max_logit = l[i];
      imax = i;
    }
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_exp += std::exp(l[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float scale = kld_row_scale(base_row), min_log_prob = kld_row_min_log_prob(base_row);
  const uint16_t* q = kld_row_values(base_row);

  RowKld r;
  r.nll = max_logit + log_sum_exp - l[target];
  r.nll_base = -(scale * q[target] + min_log_prob);
  // KL(base || Q) = sum_i p_base,i (log p_base,i - log q_i), with
  // log q_i = l_i - (max + lse); base entries under -16 nats (exp < 1.1e-7)
  // are left out, as llama.cpp leaves them out.
  const float log_z = max_logit + log_sum_exp;
  double kld = 0.0;
  int64_t imax_base = 0;
  float top_base = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float log_p_base = scale * q[i] + min_log_prob;
    if (i == 0 || log_p_base > top_base) {
      top_base = log_p_base;
      imax_base = i;
    }
    if (log_p_base > -16.0f) kld += std::exp(log_p_base) * (log_p_base - l[i] + log_z);
  }
  r.kld = kld;
  r.same_top = imax == imax_base;
  r.p_diff = std::exp(-r.nll) - std::exp(-r.nll_base);
  return r;
}

// llama.cpp's kl_divergence_result: running sums over the scored positions.
struct KldSums {
  double nll = 0, nll2 = 0, nll_base = 0, nll_base2 = 0, nll_nll_base = 0;
  double kld = 0, kld2 = 0;
  double p_diff = 0, p_diff2 = 0, p_diff4 = 0;
  int64_t same_top = 0, count = 0;

  void add(const RowKld& r) {
    nll += r.nll;
    nll2 += r.nll * r.nll;  // products in float, as llama.cpp forms them
    nll_base += r.nll_base;
    nll_base2 += r.nll_base * r.nll_base;
    nll_nll_base += r.nll * r.nll_base;
    kld += r.kld;
    kld2 += r.kld * r.kld;
    p_diff += r.p_diff;
    const double d2 = r.p_diff * r.p_diff;
    p_diff2 += d2;
    p_diff4 += d2 * d2;
    same_top += r.same_top;
    ++count;
  }
};

// The summary statistics llama.cpp prints from the sums (all but the percentiles).
void fill_from_sums(PerplexityReport& r, const KldSums& s) {
  r.count = s.count;
  const Estimate log_ppl = mean_and_uncertainty(s.nll, s.nll2, s.count);
  const Estimate log_base = mean_and_uncertainty(s.nll_base, s.nll_base2, s.count);
  r.ppl = {std::exp(log_ppl.value), std::exp(log_ppl.value) * log_ppl.err};
  r.base_ppl = {std::exp(log_base.value), std::exp(log_base.value) * log_base.err};
  const double cov = covariance(s.nll, s.nll_base, s.nll_nll_base, s.count);
  r.ln_ppl_correlation = cov / (log_ppl.err * log_base.err);
  r.ln_ppl_ratio = {log_ppl.value - log_base.value,
                    std::sqrt(log_ppl.err * log_ppl.err + log_base.err * log_base.err - 2.0 * cov)};
  const double ratio = std::exp(r.ln_ppl_ratio.value);
  r.ppl_ratio = {ratio, ratio * r.ln_ppl_ratio.err};
  const double ppl_cov = r.ppl.value * r.base_ppl.value * cov;
  r.ppl_diff = {r.ppl.value - r.base_ppl.value,
                std::sqrt(r.ppl.err * r.ppl.err + r.base_ppl.err * r.base_ppl.err - 2.0 * ppl_cov)};
  r.kld = mean_and_uncertainty(s.kld, s.kld2, s.count);
  r.delta_p = mean_and_uncertainty(s.p_diff, s.p_diff2, s.count);
  const Estimate mse = mean_and_uncertainty(s.p_diff2, s.p_diff4, s.count);
  const double rms = std::sqrt(mse.value);
  r.delta_p_rms = {rms, 0.5 / rms * mse.err};
  const double same = static_cast<double>(s.same_top) / static_cast<double>(s.count);
  r.same_top_p = {same, s.count > 1 ? std::sqrt(same * (1.0 - same) / static_cast<double>(s.count - 1)) : 0.0};
}

void check_tokens(const Model& model, std::span<const int32_t> tokens, std::string_view where) {
  const int64_t vocab = model.spec().vocab_size;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      fail(where, "tokens", "token {} is id {}, outside this model's vocabulary of {}", i, tokens[i], vocab);
}

nlohmann::ordered_json or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::optional<int32_t> chunk_bos(const Model& model) {
  const tok::Tokenizer* t = model.tokenizer();
  if (t == nullptr || !t->bos_id()) return std::nullopt;
  const std::vector<int32_t> specials = t->encode("", true);
  if (!specials.empty() && specials.front() == *t->bos_id()) return t->bos_id();
  return std::nullopt;
}

PerplexityReport compute_perplexity(const Model& model, const std::vector<int32_t>& tokens,
                                    const PerplexityOptions& options) {
  const int64_t n_ctx = options.n_ctx;
  check_n_ctx(model, n_ctx, "perplexity");
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  if (n_tokens < 2 * n_ctx)
    fail("perplexity", "text", "it tokenizes to {} tokens; a context of {} needs at least {} (2 x n_ctx, as "
         "llama-perplexity requires)", n_tokens, n_ctx, 2 * n_ctx);
  check_tokens(model, tokens, "perplexity");
  const int64_t max_chunks = n_tokens / n_ctx;
  const int64_t n_chunk = options.max_chunks < 0 ? max_chunks : std::min(options.max_chunks, max_chunks);
  if (n_chunk < 1) fail("options", "--chunks", "must be at least 1 (or negative for all), got {}", options.max_chunks);
  const int64_t vocab = model.spec().vocab_size;
  const int64_t first = n_ctx / 2, rows = kld_rows_per_chunk(n_ctx), width = kld_row_width(vocab);

  PerplexityReport r;
  r.n_ctx = n_ctx;
  r.bos = chunk_bos(model);

  std::optional<KldBaseWriter> writer;
  std::vector<uint16_t> base_rows;
  if (!options.write_base.empty()) {
    writer.emplace(options.write_base, KldBaseHeader{n_ctx, vocab, n_chunk},
                   std::span<const int32_t>(tokens.data(), static_cast<size_t>(n_chunk * n_ctx)));
    base_rows.resize(static_cast<size_t>(rows * width));
  }
  double nll = 0.0, nll2 = 0.0;
  int64_t count = 0;
  std::vector<double> row_nll(static_cast<size_t>(rows));
  for (int64_t c = 0; c < n_chunk; ++c) {
    const std::span<const int32_t> chunk(tokens.data() + c * n_ctx, static_cast<size_t>(n_ctx));
    run_chunk(model, chunk, r.bos, [&](int64_t row0, const float* logits, int64_t n) {
      model.pool().parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          const int64_t row = row0 + k;
          const int32_t target = chunk[static_cast<size_t>(first + row + 1)];
          const float* l = logits + k * vocab;
          row_nll[static_cast<size_t>(row)] =
              writer ? static_cast<double>(compress_log_probs(std::span<const float>(l, static_cast<size_t>(vocab)),
                                                              target, base_rows.data() + row * width))
                     : plain_nll(l, vocab, target);
        }
      });
    });
    // Summed in position order: the same figures for any thread count.
    for (const double v : row_nll) {
      nll += v;
      nll2 += v * v;
    }
    count += rows;
    if (writer) writer->write_rows(base_rows);
    r.chunks = c + 1;
    r.count = count;
    r.ppl = ppl_of(nll, nll2, count);
    if (options.on_chunk) options.on_chunk(c + 1, n_chunk, r);
  }
  if (writer) writer->commit();
  return r;
}

PerplexityReport compare_with_base(const Model& model, const std::string& base_path,
                                   const PerplexityOptions& options) {
  KldBaseReader base(base_path);
  const KldBaseHeader& h = base.header();
  const int64_t vocab = model.spec().vocab_size;
  if (h.n_vocab != vocab)
    fail(base_path, "n_vocab", "the base file has {} logits per position, this model {}: not the same vocabulary",
         h.n_vocab, vocab);
  check_n_ctx(model, h.n_ctx, base_path);
  check_tokens(model, base.tokens(), base_path);
  const int64_t n_ctx = h.n_ctx;
  const int64_t n_chunk = options.max_chunks < 0 ? h.n_chunk : std::min(options.max_chunks, h.n_chunk);
  if (n_chunk < 1) fail("options", "--chunks", "must be at least 1 (or negative for all), got {}", options.max_chunks);
  const int64_t first = n_ctx / 2, rows = kld_rows_per_chunk(n_ctx), width = kld_row_width(vocab);

  PerplexityReport r;
  r.n_ctx = n_ctx;
  r.compared = true;
  r.bos = chunk_bos(model);
  KldSums sums;
  std::vector<uint16_t> base_rows;
  std::vector<RowKld> row_kld_values(static_cast<size_t>(rows));
  std::vector<float> kld_values, p_diff_values;
  kld_values.reserve(static_cast<size_t>(n_chunk * rows));
  p_diff_values.reserve(static_cast<size_t>(n_chunk * rows));
  for (int64_t c = 0; c < n_chunk; ++c) {
    base.read_chunk(base_rows);
    const std::span<const int32_t> chunk(base.tokens().data() + c * n_ctx, static_cast<size_t>(n_ctx));
    run_chunk(model, chunk, r.bos, [&](int64_t row0, const float* logits, int64_t n) {
      model.pool().parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          const int64_t row = row0 + k;
          row_kld_values[static_cast<size_t>(row)] = row_kld(logits + k * vocab, vocab, base_rows.data() + row * width,
                                                             chunk[static_cast<size_t>(first + row + 1)]);
        }
      });
    });
    for (const RowKld& v : row_kld_values) {
      sums.add(v);
      kld_values.push_back(static_cast<float>(v.kld));
      p_diff_values.push_back(v.p_diff);
    }
    r.chunks = c + 1;
    fill_from_sums(r, sums);
    if (options.on_chunk) options.on_chunk(c + 1, n_chunk, r);
  }
  r.kld_percentiles = percentiles_of(kld_values);
  r.delta_p_percentiles = percentiles_of(p_diff_values);
  return r;
}

nlohmann::ordered_json PerplexityReport::to_json() const {
  nlohmann::ordered_json j;
  j["chunks"] = chunks;
  j["n_ctx"] = n_ctx;
  j["count"] = count;
  j["bos"] = bos ? nlohmann::ordered_json(*bos) : nlohmann::ordered_json(nullptr);
  j["ppl"] = or_null(ppl.value);
  j["ppl_err"] = or_null(ppl.err);
  if (!compared) return j;
  j["base_ppl"] = or_null(base_ppl.value);
  j["base_ppl_err"] = or_null(base_ppl.err);
  j["ln_ppl_correlation"] = or_null(ln_ppl_correlation);
  j["ln_ppl_ratio"] = or_null(ln_ppl_ratio.value);
  j["ln_ppl_ratio_err"] = or_null(ln_ppl_ratio.err);
  j["ppl_ratio"] = or_null(ppl_ratio.value);
  j["ppl_ratio_err"] = or_null(ppl_ratio.err);
  j["ppl_diff"] = or_null(ppl_diff.value);
  j["ppl_diff_err"] = or_null(ppl_diff.err);
  j["kld_mean"] = or_null(kld.value);
  j["kld_err"] = or_null(kld.err);
  const Percentiles& k = kld_percentiles;
  for (const auto& [name, v] : {std::pair<const char*, double>{"kld_max", k.max}, {"kld_p99_9", k.p99_9},
                                {"kld_p99", k.p99}, {"kld_p95", k.p95}, {"kld_p90", k.p90},
                                {"kld_median", k.median}, {"kld_p10", k.p10}, {"kld_p5", k.p5},
                                {"kld_p1", k.p1}, {"kld_p0_1", k.p0_1}, {"kld_min", k.min}})
    j[name] = or_null(v);
  j["delta_p_mean"] = or_null(delta_p.value);
  j["delta_p_err"] = or_null(delta_p.err);
  const Percentiles& d = delta_p_percentiles;
  for (const auto& [name, v] : {std::pair<const char*, double>{"delta_p_max", d.max}, {"delta_p_p99_9", d.p99_9},
                                {"delta_p_p99", d.p99}, {"delta_p_p95", d.p95}, {"delta_p_p90", d.p90},
                                {"delta_p_p75", d.p75}, {"delta_p_median", d.median}, {"delta_p_p25", d.p25},
                                {"delta_p_p10", d.p10}, {"delta_p_p5", d.p5}, {"delta_p_p1", d.p1},
                                {"delta_p_p0_1", d.p0_1}, {"delta_p_min", d.min}})
    j[name] = or_null(v);
  j["delta_p_rms"] = or_null(delta_p_rms.value);
  j["delta_p_rms_err"] = or_null(delta_p_rms.err);
  j["same_top_p"] = or_null(same_top_p.value);
  j["same_top_p_err"] = or_null(same_top_p.err);
  return j;
}

}  // namespace tessera

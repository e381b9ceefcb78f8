#include "eval/quality.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kernels/reference/kernels.h"
#include "runtime/session.h"

namespace tessera {

namespace {

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (aa == 0.0 && bb == 0.0) return 1.0;
  if (aa == 0.0 || bb == 0.0) return 0.0;
  return ab / (std::sqrt(aa) * std::sqrt(bb));
}

// log-softmax of one row, in double.
void log_softmax(const float* logits, int64_t n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<double>(logits[i]) - lse;
}

// Runs `ids` teacher-forced in a fresh Session; returns all logits and fills
// `chunks[c]` with the residual x after every non-last chunk, [rows][cols].
std::vector<float> run_window(const Model& m, std::span<const int32_t> ids,
                              std::vector<std::vector<float>>& chunks) {
  Session s(m, static_cast<int64_t>(ids.size()));
  for (auto& c : chunks) c.clear();
  s.on_chunk_output = [&chunks](int64_t chunk, const float* x, int64_t rows, int64_t cols) {
    auto& dst = chunks.at(static_cast<size_t>(chunk));
    dst.insert(dst.end(), x, x + rows * cols);
  };
  return s.forward(ids, LogitsWanted::All);
}

}  // namespace

QualityReport measure_quality(const Model& test, const Model& ref, const std::vector<int32_t>& tokens,
                              int64_t window) {
  const ModelSpec& ts = test.spec();
  const ModelSpec& rs = ref.spec();
  if (ts.vocab_size != rs.vocab_size)
    fail(test.path(), "vocab size", "{} differs from the reference's {} ({})", ts.vocab_size, rs.vocab_size,
         ref.path());
  if (ts.num_layers != rs.num_layers || ts.hidden_size != rs.hidden_size)
    fail(test.path(), "shape", "{} layers x {} hidden differs from the reference's {} x {} ({})", ts.num_layers,
         ts.hidden_size, rs.num_layers, rs.hidden_size, ref.path());
  if (test.programs().num_chunks != ref.programs().num_chunks)
    fail(test.path(), "chunks", "{} chunks differ from the reference's {}", test.programs().num_chunks,
         ref.programs().num_chunks);
  if (tokens.size() < 2) fail("quality", "tokens", "need at least 2 tokens, got {}", tokens.size());
  if (window < 2) fail("quality", "window", "must be at least 2, got {}", window);
  for (const Model* m : {&test, &ref})
    if (m->spec().context_length > 0) window = std::min(window, m->spec().context_length);

  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t vocab = ts.vocab_size;
  const int64_t hidden = ts.hidden_size;
  const std::vector<const Program*> decode = test.programs().variant(1);
  const size_t nchunks = static_cast<size_t>(test.programs().num_chunks);

  QualityReport r;
  r.tokens = n;
  r.window = window;
  r.layers.resize(nchunks - 1);
  for (size_t c = 0; c + 1 < nchunks; ++c) {
    r.layers[c].layer = decode[c]->layer_end - 1;
    r.layers[c].min_cosine = std::numeric_limits<double>::infinity();
  }
  r.logits_cosine_min = std::numeric_limits<double>::infinity();

  std::vector<std::vector<float>> test_x(nchunks), ref_x(nchunks);
  std::vector<double> lp_test, lp_ref;
  int64_t agree = 0, test_hits = 0, ref_hits = 0;
  double kl_sum = 0.0, logits_cos_sum = 0.0, nll_test = 0.0, nll_ref = 0.0;
  for (int64_t start = 0; start < n; start += window) {
    const int64_t rows = std::min(window, n - start);
    const std::span<const int32_t> ids(tokens.data() + start, static_cast<size_t>(rows));
    const std::vector<float> lt = run_window(test, ids, test_x);
    const std::vector<float> lr = run_window(ref, ids, ref_x);
    ++r.windows;
    for (size_t c = 0; c + 1 < nchunks; ++c) {
      if (test_x[c].size() != static_cast<size_t>(rows * hidden) || ref_x[c].size() != test_x[c].size())
        fail(test.path(), "quality", "chunk {} produced {} / {} values of x, expected {}", c, test_x[c].size(),
             ref_x[c].size(), rows * hidden);
      for (int64_t t = 0; t < rows; ++t) {
        const double cs = cosine(test_x[c].data() + t * hidden, ref_x[c].data() + t * hidden, hidden);
        r.layers[c].mean_cosine += cs;
        r.layers[c].min_cosine = std::min(r.layers[c].min_cosine, cs);
      }
    }
    for (int64_t t = 0; t < rows; ++t) {
      const float* a = lt.data() + t * vocab;
      const float* b = lr.data() + t * vocab;
      const int64_t top_t = ref::argmax(a, vocab), top_r = ref::argmax(b, vocab);
      agree += top_t == top_r;
      const double cs = cosine(a, b, vocab);
      logits_cos_sum += cs;
      r.logits_cosine_min = std::min(r.logits_cosine_min, cs);
      log_softmax(a, vocab, lp_test);
      log_softmax(b, vocab, lp_ref);
      double kl = 0.0;
      for (int64_t v = 0; v < vocab; ++v) {
        const double lr_v = lp_ref[static_cast<size_t>(v)];
        kl += std::exp(lr_v) * (lr_v - lp_test[static_cast<size_t>(v)]);
      }
      kl = std::max(kl, 0.0);  // rounding can make an exact match slightly negative
      kl_sum += kl;
      r.kl_max = std::max(r.kl_max, kl);
      const int64_t pos = start + t;
      if (pos + 1 < n) {
        const int32_t next = tokens[static_cast<size_t>(pos + 1)];
        nll_test -= lp_test[static_cast<size_t>(next)];
        nll_ref -= lp_ref[static_cast<size_t>(next)];
        test_hits += top_t == next;
        ref_hits += top_r == next;
        ++r.predictions;
      }
    }
  }
  for (auto& l : r.layers) l.mean_cosine /= static_cast<double>(n);
  r.top1_agreement = static_cast<double>(agree) / static_cast<double>(n);
  r.kl_mean = kl_sum / static_cast<double>(n);
  r.logits_cosine_mean = logits_cos_sum / static_cast<double>(n);
  const double p = static_cast<double>(r.predictions);
  r.nll_test = nll_test / p;
  r.nll_ref = nll_ref / p;
  r.ppl_test = std::exp(r.nll_test);
  r.ppl_ref = std::exp(r.nll_ref);
  r.test_top1_accuracy = static_cast<double>(test_hits) / p;
  r.ref_top1_accuracy = static_cast<double>(ref_hits) / p;
  return r;
}

nlohmann::ordered_json QualityReport::to_json() const {
  nlohmann::ordered_json j;
  j["tokens"] = tokens;
  j["predictions"] = predictions;
  j["window"] = window;
  j["windows"] = windows;
  j["top1_agreement"] = top1_agreement;
  j["kl_mean"] = kl_mean;
  j["kl_max"] = kl_max;
  j["logits_cosine_mean"] = logits_cosine_mean;
  j["logits_cosine_min"] = logits_cosine_min;
  j["nll_test"] = nll_test;
  j["nll_ref"] = nll_ref;
  j["ppl_test"] = ppl_test;
  j["ppl_ref"] = ppl_ref;
  j["test_top1_accuracy"] = test_top1_accuracy;
  j["ref_top1_accuracy"] = ref_top1_accuracy;
  double mn = 1.0, sum = 0.0;
  int64_t worst = -1;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerCosine& l : this->layers) {
    layers.push_back({{"layer", l.layer}, {"mean_cosine", l.mean_cosine}, {"min_cosine", l.min_cosine}});
    sum += l.mean_cosine;
    if (worst < 0 || l.mean_cosine < mn) {
      mn = l.mean_cosine;
      worst = l.layer;
    }
  }
  j["layer_cosine_min"] = this->layers.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(mn);
  j["layer_cosine_min_layer"] = worst < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(worst);
  j["layer_cosine_mean"] =
      this->layers.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(sum / this->layers.size());
  j["layers"] = std::move(layers);
  return j;
}

}  // namespace tessera

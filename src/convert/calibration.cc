#include "convert/calibration.h"

#include <algorithm>
#include <random>

#include "core/error.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace tessera {

Calibration calibrate(const std::string& source, const CalibrationOptions& o) {
  if (o.max_tokens < 1) fail("calibration", "max_tokens", "must be at least 1, got {}", o.max_tokens);
  LoadOptions load;
  load.threads = o.threads;
  load.isa = Isa::Scalar;
  const std::unique_ptr<Model> model = Model::load(source, load);
  const int64_t limit = std::min<int64_t>(o.max_tokens, model->spec().context_length);

  Calibration cal;
  std::vector<int32_t> ids;
  if (const tok::Tokenizer* t = model->tokenizer()) {
    const std::string_view text = o.text.empty() ? builtin_calibration_text() : std::string_view(o.text);
    ids = t->encode(text);
    if (ids.empty()) fail("calibration", "text", "tokenizes to no tokens");
    if (static_cast<int64_t>(ids.size()) > limit) ids.resize(static_cast<size_t>(limit));
  } else {
    cal.random_ids = true;
    std::mt19937_64 rng(0x7e55e7a);
    const uint64_t vocab = static_cast<uint64_t>(model->spec().vocab_size);
    for (int64_t i = 0; i < limit; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));
  }
  cal.ids = ids;
  const int64_t tokens = static_cast<int64_t>(ids.size());

  // Sums of squares in double, per weight, in token order (the observer runs
  // on the calling thread, between ops).
  std::map<std::string, std::vector<double>> sums;
  Session session(*model, tokens);
  session.on_linear_input = [&](const std::string& weight, const float* x, int64_t rows, int64_t cols) {
    std::vector<double>& s = sums[weight];
    s.resize(static_cast<size_t>(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) s[c] += static_cast<double>(x[r * cols + c]) * x[r * cols + c];
  };
  session.forward(ids);
  for (const auto& [name, s] : sums) {
    std::vector<float>& m = cal.input_moments[name];
    m.resize(s.size());
    for (size_t c = 0; c < s.size(); ++c) m[c] = static_cast<float>(s[c] / static_cast<double>(tokens));
  }
  return cal;
}

}  // namespace tessera

#include "eval/benchmark.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include "core/error.h"
#include "eval/read_bandwidth.h"
#include "runtime/session.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

// Deterministic pseudo-random token ids in [0, vocab) (splitmix64).
class TokenStream {
 public:
  TokenStream(uint64_t seed, int64_t vocab) : state_(seed), vocab_(static_cast<uint64_t>(vocab)) {}
  int32_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<int32_t>(z % vocab_);
  }
  std::vector<int32_t> take(int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = next();
    return ids;
  }

 private:
  uint64_t state_;
  uint64_t vocab_;
};

void mean_sd(const std::vector<double>& v, double& mean, double& sd) {
  mean = 0;
  sd = 0;
  if (v.empty()) return;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  if (v.size() < 2) return;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// Times `gen` decode steps on `session`; returns seconds, and the first step's in *first.
double time_decode(Session& session, TokenStream& tokens, int64_t gen, double* first = nullptr) {
  const auto start = Clock::now();
  for (int64_t i = 0; i < gen; ++i) {
    const int32_t id = tokens.next();
    session.forward(std::span<const int32_t>(&id, 1));
    if (i == 0 && first) *first = seconds_since(start);
  }
  return seconds_since(start);
}

BandwidthCeiling ceiling_of(const Model& model, int64_t depth, double tg_tok_s) {
  BandwidthCeiling c;
  c.bytes_per_token = decode_step_bytes(model, depth);
  c.read_gb_s = measure_read_bandwidth(detected_isa(), c.bytes_per_token, model.pool()).gb_s;
  c.ceiling_tok_s = c.read_gb_s * 1e9 / static_cast<double>(c.bytes_per_token);
  c.efficiency = tg_tok_s / c.ceiling_tok_s;
  return c;
}

}  // namespace

int64_t decode_step_bytes(const Model& model, int64_t depth) {
  const WeightStore& weights = model.weights();
  const int64_t kv_element = kv_element_bytes(model.kv_type());
  int64_t bytes = 0;
  for (const Program& p : model.programs().programs) {
    if (p.kind != ProgramKind::Decode) continue;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::Embed) {
        const WeightView& e = weights.get(op.weights.at(0));
        bytes += static_cast<int64_t>(weight_data_bytes(e.format, 1, e.cols()) + (e.scales ? sizeof(float) : 0));
        continue;
      }
      for (const std::string& name : op.weights) bytes += static_cast<int64_t>(weight_view_bytes(weights.get(name)));
      if (op.kind == OpKind::Attention) {
        const int64_t seen = op.window > 0 ? std::min(depth + 1, op.window) : depth + 1;
        bytes += 2 * seen * op.kv_heads * op.head_dim * kv_element;
      }
    }
  }
  return bytes;
}

int64_t bench_context_needed(const BenchOptions& o) {
  int64_t longest = o.prompt;
  for (int64_t d : o.depths) longest = std::max(longest, d);
  return longest + o.gen;
}

double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // Linux: kB
}

void validate_bench_options(const BenchOptions& o) {
  if (o.reps < 1) fail("options", "--reps", "must be at least 1, got {}", o.reps);
  if (o.prompt < 1) fail("options", "--prompt", "must be at least 1, got {}", o.prompt);
  if (o.gen < 0) fail("options", "--gen", "must be >= 0 (0: prefill only), got {}", o.gen);
  if (o.gen == 0 && !o.depths.empty()) fail("options", "--depths", "times decode steps: needs --gen of at least 1");
  if (o.context_length < 0) fail("options", "--ctx", "must be >= 0, got {}", o.context_length);
  if (o.max_tokens_per_call < 0) fail("options", "--batch", "must be >= 0, got {}", o.max_tokens_per_call);
  for (int64_t d : o.depths)
    if (d < 0) fail("options", "--depths", "depths must be >= 0, got {}", d);
}

BenchResult run_benchmark(const Model& model, const BenchOptions& o) {
  validate_bench_options(o);
  const int64_t needed = bench_context_needed(o);
  const int64_t model_max = model.spec().context_length;
  if (o.context_length > 0 && needed > o.context_length)
    fail("options", "context",
         "max(--prompt, --depths) + --gen = {} tokens do not fit in the context length {} (--ctx)", needed,
         o.context_length);
  if (model_max > 0 && needed > model_max)
    fail(model.path(), "context",
         "max(--prompt, --depths) + --gen = {} tokens do not fit in the model's context length {}", needed,
         model_max);
  const int64_t ctx = o.context_length > 0 ? o.context_length : needed;
  const int64_t vocab = model.spec().vocab_size;

  BenchResult r;
  r.context_length = ctx;

  // One Session for the warm-up and every repetition, reset in between, as
  // llama-bench keeps one context and clears its memory per repetition: the
  // KV cache and the programs' workspaces are allocated (and their pages
  // touched) once, by the warm-up, outside the timed runs.
  Session s(model, ctx);
  if (o.warmup) {
    TokenStream tokens(o.seed ^ 0x5555, vocab);
    s.forward(tokens.take(o.prompt), LogitsWanted::Last, o.max_tokens_per_call);
    time_decode(s, tokens, std::min<int64_t>(o.gen, 2));
  }

  // Per-program time over the main runs, in first-run order.
  std::vector<std::string> order;
  std::map<std::string, std::pair<double, int64_t>> per_program;  // seconds, calls
  double ttft_sum = 0, prefill_sum = 0, decode_cpu = 0;
  s.on_program_timed = [&](const Program& p, double seconds) {
    auto [it, fresh] = per_program.try_emplace(p.name, 0.0, 0);
    if (fresh) order.push_back(p.name);
    it->second.first += seconds;
    it->second.second += 1;
  };
  for (int64_t rep = 0; rep < o.reps; ++rep) {
    s.reset();
    TokenStream tokens(o.seed, vocab);
    const std::vector<int32_t> prompt = tokens.take(o.prompt);
    const auto start = Clock::now();
    s.forward(prompt, LogitsWanted::Last, o.max_tokens_per_call);
    const double pp = seconds_since(start);
    r.pp_runs.push_back(static_cast<double>(o.prompt) / pp);
    prefill_sum += pp;
    if (o.gen == 0) continue;
    const double cpu0 = cpu_seconds();
    double first = 0;
    const double tg = time_decode(s, tokens, o.gen, &first);
    decode_cpu += cpu_seconds() - cpu0;
    r.tg_runs.push_back(static_cast<double>(o.gen) / tg);
    ttft_sum += pp + first;
  }
  s.on_program_timed = nullptr;
  mean_sd(r.pp_runs, r.pp_tok_s, r.pp_tok_s_sd);
  r.prefill_ms = prefill_sum / static_cast<double>(o.reps) * 1000.0;
  if (o.gen > 0) {
    mean_sd(r.tg_runs, r.tg_tok_s, r.tg_tok_s_sd);
    r.ttft_ms = ttft_sum / static_cast<double>(o.reps) * 1000.0;
    r.cpu_s_per_token = decode_cpu / static_cast<double>(o.reps * o.gen);
  }
  for (const std::string& name : order) {
    const auto& [seconds, calls] = per_program[name];
    ProgramTime t;
    t.program = name;
    t.ms_per_call = seconds / static_cast<double>(calls) * 1000.0;
    t.calls = calls / o.reps;
    r.programs.push_back(std::move(t));
  }

  for (int64_t depth : o.depths) {
    std::vector<double> runs;
    for (int64_t rep = 0; rep < o.reps; ++rep) {
      s.reset();
      TokenStream tokens(o.seed + 1 + static_cast<uint64_t>(depth), vocab);
      if (depth > 0) s.forward(tokens.take(depth), LogitsWanted::Last, o.max_tokens_per_call);
      runs.push_back(static_cast<double>(o.gen) / time_decode(s, tokens, o.gen));
    }
    DepthResult d;
    d.depth = depth;
    mean_sd(runs, d.tg_tok_s, d.tg_tok_s_sd);
    r.depths.push_back(d);
  }
  r.peak_rss_mib = peak_rss_mib();
  // After the peak RSS: the probe's buffer is as large as a decode step's
  // reads (the whole model) and would otherwise count as the model's memory.
  if (o.bandwidth && o.gen > 0) {
    r.ceiling = ceiling_of(model, o.prompt + (o.gen - 1) / 2, r.tg_tok_s);
    for (DepthResult& d : r.depths) d.ceiling = ceiling_of(model, d.depth + (o.gen - 1) / 2, d.tg_tok_s);
  }
  return r;
}

}  // namespace tessera

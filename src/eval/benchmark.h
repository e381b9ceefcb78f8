// Throughput benchmark of a loaded Model (what `tessera bench` runs), in the
// manner of llama-bench: one Session (reset per repetition, its KV cache and
// workspaces kept, as llama-bench keeps its context), and per repetition a
// prefill of `prompt` pseudo-random token ids (fixed seed, no tokenizer), then `gen`
// decode steps of one token each (the next pseudo-random id; no sampling).
// Rates are the mean and sample standard deviation of the per-repetition
// rates. Optionally the decode rate at context depths (prefill `depth`
// tokens untimed, then time `gen` decode steps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace tessera {

struct BenchOptions {
  int64_t prompt = 512;             // prefill tokens (>= 1)
  int64_t gen = 128;                // decode steps (0: prefill only, as llama-bench -n 0)
  int64_t reps = 3;                 // repetitions (>= 1)
  std::vector<int64_t> depths;      // extra decode measurements at these context depths (>= 0)
  int64_t context_length = 0;       // Session context; 0: exactly what the runs need
  int64_t max_tokens_per_call = 0;  // prefill call size (0: the largest prefill variant)
  uint64_t seed = 1234;             // of the pseudo-random token ids
  bool warmup = true;               // one untimed short prefill + decode first (touches mmap'd weights)
  bool bandwidth = true;            // measure the read-bandwidth ceiling of the decode rates
};

struct ProgramTime {
  std::string program;  // "decode.c0", "prefill512.c1", ...
  double ms_per_call = 0;  // mean wall ms per call of this program (decode: per step)
  int64_t calls = 0;       // calls per repetition
};

// A decode rate against its memory ceiling: the bytes one step reads at
// that context (decode_step_bytes) over the read bandwidth measured for a
// working set of that size (eval/read_bandwidth.h).
struct BandwidthCeiling {
  int64_t bytes_per_token = 0;
  double read_gb_s = 0;
  double ceiling_tok_s = 0;  // read_gb_s · 10⁹ / bytes_per_token
  double efficiency = 0;     // the measured decode rate / ceiling_tok_s
};

struct DepthResult {
  int64_t depth = 0;
  double tg_tok_s = 0, tg_tok_s_sd = 0;
  BandwidthCeiling ceiling;  // zeros unless BenchOptions::bandwidth
};

struct BenchResult {
  double pp_tok_s = 0, pp_tok_s_sd = 0;  // prefill tokens / s
  double tg_tok_s = 0, tg_tok_s_sd = 0;  // decode tokens / s (depth = prompt)
  double ttft_ms = 0;                    // mean of prefill + the first decode step
  double prefill_ms = 0;                 // mean prefill wall time
  double peak_rss_mib = 0;               // process peak resident set (VmHWM / ru_maxrss)
  double cpu_s_per_token = 0;            // user + sys CPU seconds of the decode phase / decode steps
  int64_t context_length = 0;            // of the Sessions
  std::vector<double> pp_runs, tg_runs;  // per repetition
  std::vector<ProgramTime> programs;     // prefill programs first, then decode, in run order
  std::vector<DepthResult> depths;
  BandwidthCeiling ceiling;              // of tg_tok_s, at its mean depth; zeros unless BenchOptions::bandwidth
};

// Throws Error naming the first bad option (reps, prompt < 1; gen < 0;
// depths without decode steps; negative context, batch or depth).
// run_benchmark calls it too.
//
// With gen = 0 only prefill is timed: the decode fields of BenchResult
// (tg_*, ttft_ms, cpu_s_per_token, ceiling) stay zero and the CLI reports
// them as absent.
void validate_bench_options(const BenchOptions& options);

// Throws Error for bad options (as validate_bench_options) and for a run
// that does not fit in the context.
BenchResult run_benchmark(const Model& model, const BenchOptions& options);

// The largest context a run of `options` needs: max(prompt, depths) + gen.
int64_t bench_context_needed(const BenchOptions& options);

// Bytes one decode step reads with `depth` tokens already in the KV cache:
// every weight of every decode program (the embedding: one row; a tied
// output head counts its full matrix again), norm and bias vectors, and
// the K and V rows each attention op sees (f32).
int64_t decode_step_bytes(const Model& model, int64_t depth);

// Peak resident set of this process in MiB.
double peak_rss_mib();

}  // namespace tessera

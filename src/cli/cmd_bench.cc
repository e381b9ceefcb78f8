// tessera bench MODEL [--prompt 512] [--gen 128] [--reps 3] [-t N] [--chunks N] [--depths 0,256,1024] [--arithmetic exact|fast] [--kv-type f32|f16] [--json]
//
// Throughput benchmark (eval/benchmark.h), in the manner of llama-bench:
// prefill of --prompt pseudo-random token ids, then --gen decode steps, per
// repetition on one session reset in between; mean ± sample sd of the rates, TTFT, the wall
// ms of each program per call, peak RSS and decode CPU-seconds per token.
// --depths adds the decode rate after that many tokens of context. Every
// decode rate is also set against its memory ceiling: bytes read per step
// over the read bandwidth measured for that working set (--no-bandwidth
// skips the probe). --json prints one object instead of the table.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "eval/benchmark.h"
#include "kernels/cpu_isa.h"
#include "load/model_loader.h"

namespace tessera::cli {

namespace fs = std::filesystem;

namespace {

// Bytes of the weights on disk: a bundle's weights.bin, a file's size, or the
// .safetensors / .gguf / .bin files of a checkpoint directory.
uint64_t weights_on_disk(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  if (!fs::is_directory(p, ec)) return 0;
  if (fs::is_regular_file(p / "weights.bin", ec)) return fs::file_size(p / "weights.bin", ec);
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(p, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file(ec) && (ext == ".safetensors" || ext == ".gguf" || ext == ".bin")) total += e.file_size(ec);
  }
  return total;
}

}  // namespace

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure prefill / decode throughput (llama-bench style)");
  static std::string model;
  static BenchOptions o;
  static int64_t chunks = 0;
  static int64_t row_block = kDefaultRowBlock;
  static KernelFlags kernels;
  static bool json = false, no_warmup = false, verify = false, no_bandwidth = false, reference = false;
  cmd->add_option("model", model, "Bundle, GGUF, HF directory or pulled name")->required();
  cmd->add_option("-p,--prompt", o.prompt, "Prefill tokens per repetition")->capture_default_str();
  cmd->add_option("-n,--gen", o.gen, "Decode steps per repetition (0: time prefill only)")->capture_default_str();
  cmd->add_option("-r,--reps", o.reps, "Repetitions (one session, reset before each)")->capture_default_str();
  cmd->add_option("--chunks", chunks, "Split the layers into this many programs (0 = the bundle's, else 1)")
      ->capture_default_str();
  cmd->add_option("-d,--depths", o.depths, "Also measure decode after this many context tokens (e.g. 0,256,1024)")
      ->delimiter(',');
  cmd->add_option("-c,--ctx", o.context_length, "Session context length (0 = what the runs need)")
      ->capture_default_str();
  cmd->add_option("-b,--batch", o.max_tokens_per_call, "Prompt tokens per prefill call (0 = largest variant)")
      ->capture_default_str();
  cmd->add_option("--row-block", row_block, "Tokens per row block of long calls (0 = calls run whole)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the pseudo-random token ids")->capture_default_str();
  kernels.add_to(*cmd);
  cmd->add_flag("--no-warmup", no_warmup, "Skip the untimed warm-up run");
  cmd->add_flag("--no-bandwidth", no_bandwidth, "Skip the read-bandwidth probe (ceiling of the decode rates)");
  cmd->add_flag("--verify", verify, "Bundles: check every weight's sha256 before running");
  cmd->add_flag("--reference", reference, kReferenceHelp);
  cmd->add_flag("--json", json, "Print one JSON object instead of a table");
  cmd->callback([] {
    // Option errors first, before the (possibly slow) load.
    validate_bench_options(o);
    if (row_block < 0) fail("options", "--row-block", "must be 0 (off) or a positive number of tokens, got {}", row_block);
    o.warmup = !no_warmup;
    o.bandwidth = !no_bandwidth;
    LoadOptions lo;
    lo.chunks = chunks;
    lo.verify = verify;
    lo.row_block = row_block;
    kernels.apply(lo);
    auto m = load_model_for_running(model, lo, reference);
    const BenchResult r = run_benchmark(*m, o);
    const BackendInfo backend = m->backend().info();
    const std::string isa = backend.level;  // the level the kernels run (TESSERA_ISA or the CPU's best)
    const bool avx_vnni = backend.runs("avx_vnni");  // the avx2 kernels' AVX-VNNI variants
    const uint64_t disk = weights_on_disk(m->path());
    const bool decoded = o.gen > 0;  // else no decode rate, TTFT or ceiling exists
    const bool ceilings = o.bandwidth && decoded;

    if (json) {
      nlohmann::ordered_json out;
      out["model"] = model;
      out["path"] = m->path();
      out["arch"] = m->spec().arch;
      out["threads"] = m->pool().threads();
      out["arithmetic"] = arithmetic_name(m->arithmetic());
      out["isa"] = isa;
      out["avx_vnni"] = avx_vnni;
      out["kv_type"] = kv_type_name(m->kv_type());
      if (m->weights_memory()) out["weights_memory"] = file_memory_name(*m->weights_memory());
      else out["weights_memory"] = nullptr;  // dequantized into memory
      out["chunks"] = m->programs().num_chunks;
      out["prompt"] = o.prompt;
      out["gen"] = o.gen;
      out["reps"] = o.reps;
      out["context_length"] = r.context_length;
      out["pp_tok_s"] = r.pp_tok_s;
      out["pp_tok_s_sd"] = r.pp_tok_s_sd;
      const auto decode_value = [&](double v) { return decoded ? nlohmann::ordered_json(v) : nullptr; };
      out["tg_tok_s"] = decode_value(r.tg_tok_s);
      out["tg_tok_s_sd"] = decode_value(r.tg_tok_s_sd);
      out["pp_runs"] = r.pp_runs;
      out["tg_runs"] = r.tg_runs;
      out["ttft_ms"] = decode_value(r.ttft_ms);
      out["prefill_ms"] = r.prefill_ms;
      out["peak_rss_mib"] = r.peak_rss_mib;
      out["cpu_s_per_token"] = decode_value(r.cpu_s_per_token);
      nlohmann::ordered_json programs = nlohmann::ordered_json::array();
      for (const ProgramTime& p : r.programs)
        programs.push_back({{"program", p.program}, {"ms_per_step", p.ms_per_call}, {"calls", p.calls}});
      out["chunk_ms"] = programs;
      nlohmann::ordered_json depths = nlohmann::ordered_json::array();
      auto ceiling_json = [](const BandwidthCeiling& c) {
        return nlohmann::ordered_json{{"decode_bytes_per_token", c.bytes_per_token},
                                      {"read_gb_s", c.read_gb_s},
                                      {"ceiling_tok_s", c.ceiling_tok_s},
                                      {"efficiency", c.efficiency}};
      };
      for (const DepthResult& d : r.depths) {
        nlohmann::ordered_json dj{{"depth", d.depth}, {"tg_tok_s", d.tg_tok_s}, {"tg_tok_s_sd", d.tg_tok_s_sd}};
        if (o.bandwidth) dj["bandwidth"] = ceiling_json(d.ceiling);
        depths.push_back(dj);
      }
      out["depths"] = depths;
      if (ceilings) out["bandwidth"] = ceiling_json(r.ceiling);
      out["bundle_bytes"] = disk;
      out["weight_bytes"] = m->weight_bytes();
      out["from_bundle"] = m->from_bundle();
      out["version"] = TESSERA_VERSION;
      fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
    fmt::print("model {} ({}), {} threads, isa {}, arithmetic {}, kv {}, weights {}, {} chunk(s), {} reps, context {}\n",
               model, m->spec().arch, m->pool().threads(), avx_vnni ? isa + " (AVX-VNNI)" : isa,
               arithmetic_name(m->arithmetic()), kv_type_name(m->kv_type()),
               m->weights_memory() ? file_memory_name(*m->weights_memory()) : "in memory",
               m->programs().num_chunks, o.reps, r.context_length);
    fmt::print("weights on disk {:.1f} MiB, in memory {:.1f} MiB\n", disk / 1048576.0,
               m->weight_bytes() / 1048576.0);
    fmt::print("{:<14} {:>22}\n", "test", "tok/s");
    fmt::print("{:<14} {:>13.2f} ± {:<7.2f}\n", fmt::format("pp{}", o.prompt), r.pp_tok_s, r.pp_tok_s_sd);
    if (decoded) fmt::print("{:<14} {:>13.2f} ± {:<7.2f}\n", fmt::format("tg{}", o.gen), r.tg_tok_s, r.tg_tok_s_sd);
    for (const DepthResult& d : r.depths)
      fmt::print("{:<14} {:>13.2f} ± {:<7.2f}\n", fmt::format("tg{} @ d{}", o.gen, d.depth), d.tg_tok_s,
                 d.tg_tok_s_sd);
    auto print_ceiling = [](const std::string& what, const BandwidthCeiling& c) {
      fmt::print("{:<14} reads {:.2f} MiB/token at {:.1f} GB/s: ceiling {:.1f} tok/s, decode at {:.1f}% of it\n",
                 what, c.bytes_per_token / 1048576.0, c.read_gb_s, c.ceiling_tok_s, 100.0 * c.efficiency);
    };
    if (ceilings) {
      print_ceiling(fmt::format("tg{}", o.gen), r.ceiling);
      for (const DepthResult& d : r.depths) print_ceiling(fmt::format("tg{} @ d{}", o.gen, d.depth), d.ceiling);
    }
    if (decoded)
      fmt::print("ttft {:.2f} ms (prefill {:.2f} ms + first decode step) | peak RSS {:.1f} MiB | "
                 "decode CPU {:.4f} s/token\n",
                 r.ttft_ms, r.prefill_ms, r.peak_rss_mib, r.cpu_s_per_token);
    else
      fmt::print("prefill {:.2f} ms | peak RSS {:.1f} MiB (no decode steps: --gen 0)\n", r.prefill_ms,
                 r.peak_rss_mib);
    fmt::print("{:<20} {:>8} {:>12}\n", "program", "calls", "ms/call");
    for (const ProgramTime& p : r.programs) fmt::print("{:<20} {:>8} {:>12.3f}\n", p.program, p.calls, p.ms_per_call);
  });
}

}  // namespace tessera::cli

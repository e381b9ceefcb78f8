// tessera audit MODEL [--max-fallback 5] [--steps 8] [-t N] [--chunks N] [--arithmetic exact|fast] [--kv-type f32|f16] [--json]
//
// Prints, per program, the ops by kernel and the share of ops and of measured
// time on reference (fallback) kernels (eval/audit.h). Exits 1 when any
// program, or the whole, exceeds --max-fallback percent on either; 0 otherwise.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "eval/audit.h"

namespace tessera::cli {

void register_audit(CLI::App& app) {
  auto* cmd = app.add_subcommand("audit", "Check that ops run on optimized kernels (compute-plan audit)");
  static std::string model;
  static double max_fallback = 5.0;
  static int64_t steps = 8, chunks = 0;
  static KernelFlags kernels;
  static bool json = false;
  cmd->add_option("model", model, "Bundle, GGUF, HF directory or pulled name")->required();
  cmd->add_option("--max-fallback", max_fallback, "Largest allowed share (percent) of ops and of time on fallback kernels")
      ->capture_default_str();
  cmd->add_option("--steps", steps, "Decode steps timed")->capture_default_str();
  cmd->add_option("--chunks", chunks, "Layer chunks per step (0 = the bundle's)")->capture_default_str();
  kernels.add_to(*cmd);
  cmd->add_flag("--json", json, "Print one JSON object");
  cmd->callback([] {
    if (!(max_fallback >= 0 && max_fallback <= 100)) fail("options", "--max-fallback", "must be a percentage in [0, 100]");
    if (steps < 1) fail("options", "--steps", "must be at least 1");
    LoadOptions o;
    o.chunks = chunks;
    kernels.apply(o);
    auto m = Model::load(model, o);
    const AuditResult r = audit_model(*m, steps);
    const bool ok = r.passes(max_fallback / 100.0);
    if (json) {
      nlohmann::ordered_json j;
      j["model"] = model;
      j["isa"] = r.isa;
      j["avx_vnni"] = r.avx_vnni;
      j["pass"] = ok;
      j["max_fallback_percent"] = max_fallback;
      j["fallback_op_percent"] = 100 * r.fallback_op_share();
      j["fallback_time_percent"] = 100 * r.fallback_time_share();
      for (const ProgramAudit& p : r.programs) {
        nlohmann::ordered_json pj;
        pj["program"] = p.program;
        pj["calls"] = p.calls;  // 0: not run (its prefill size does not fit the context)
        pj["ops"] = p.ops;
        pj["fallback_ops"] = p.fallback_ops;
        pj["ms_per_call"] = p.calls ? 1e3 * p.seconds / p.calls : 0.0;
        pj["fallback_op_percent"] = 100 * p.fallback_op_share();
        pj["fallback_time_percent"] = 100 * p.fallback_time_share();
        for (const KernelUse& k : p.kernels)
          pj["kernels"].push_back({{"kernel", k.kernel}, {"fallback", k.fallback}, {"ops", k.ops},
                                   {"ms_per_call", p.calls ? 1e3 * k.seconds / p.calls : 0.0}});
        j["programs"].push_back(pj);
      }
      fmt::print("{}\n", j.dump(1));
    } else {
      fmt::print("isa {}{} | limit {:.1f}% of ops and of time on fallback kernels\n", r.isa,
                 r.avx_vnni ? " (AVX-VNNI)" : "", max_fallback);
      for (const ProgramAudit& p : r.programs) {
        if (p.calls == 0) fmt::print("\n{}: not run (its prefill size does not fit the context)", p.program);
        fmt::print("\n{}: {} ops, {:.3f} ms/call | fallback {:.1f}% of ops, {:.1f}% of time\n", p.program, p.ops,
                   p.calls ? 1e3 * p.seconds / p.calls : 0.0, 100 * p.fallback_op_share(),
                   100 * p.fallback_time_share());
        for (const KernelUse& k : p.kernels)
          fmt::print("  {:<28} {:>4} ops {:>9.3f} ms/call ({:4.1f}%){}\n", k.kernel, k.ops,
                     p.calls ? 1e3 * k.seconds / p.calls : 0.0, p.seconds > 0 ? 100 * k.seconds / p.seconds : 0.0,
                     k.fallback ? "  FALLBACK" : "");
      }
      fmt::print("\ntotal: {} ops, fallback {:.1f}% of ops, {:.1f}% of time: {}\n", r.ops, 100 * r.fallback_op_share(),
                 100 * r.fallback_time_share(), ok ? "PASS" : "FAIL");
    }
    if (!ok) set_exit_code(1);
  });
}

}  // namespace tessera::cli

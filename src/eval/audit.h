// Compute-plan audit: which kernel every op of every program is placed on
// (cpu/executor.h), and how much of the measured time goes to reference
// kernels standing in for missing optimized ones — our counterpart of the
// seed's "ops on the fast engine" check (≤ 5% elsewhere).
//
// Timing: one call of every prefill variant (its full T tokens, random ids)
// followed by `decode_steps` decode calls, each op timed separately.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace tessera {

struct KernelUse {
  std::string kernel;
  bool fallback = false;
  int64_t ops = 0;       // ops of the program placed on it
  double seconds = 0;    // measured, summed over the audit's calls
};

struct ProgramAudit {
  std::string program;
  int64_t ops = 0, fallback_ops = 0;
  double seconds = 0, fallback_seconds = 0;
  int64_t calls = 0;
  std::vector<KernelUse> kernels;  // by measured time, largest first

  double fallback_op_share() const { return ops ? static_cast<double>(fallback_ops) / ops : 0; }
  double fallback_time_share() const { return seconds > 0 ? fallback_seconds / seconds : 0; }
};

struct AuditResult {
  std::string isa;
  bool avx_vnni = false;  // the avx2 level's integer kernels ran their AVX-VNNI variants
  std::vector<ProgramAudit> programs;
  int64_t ops = 0, fallback_ops = 0;
  double seconds = 0, fallback_seconds = 0;

  double fallback_op_share() const { return ops ? static_cast<double>(fallback_ops) / ops : 0; }
  double fallback_time_share() const { return seconds > 0 ? fallback_seconds / seconds : 0; }
  // True when every program (and the total) keeps both shares ≤ limit.
  bool passes(double limit) const;
};

AuditResult audit_model(const Model& model, int64_t decode_steps = 8);

}  // namespace tessera

#include "eval/audit.h"

#include <algorithm>
#include <map>
#include <random>

#include "runtime/session.h"

namespace tessera {

bool AuditResult::passes(double limit) const {
  if (fallback_op_share() > limit || fallback_time_share() > limit) return false;
  for (const ProgramAudit& p : programs)
    if (p.fallback_op_share() > limit || p.fallback_time_share() > limit) return false;
  return true;
}

AuditResult audit_model(const Model& model, int64_t decode_steps) {
  const ProgramSet& set = model.programs();
  std::vector<OpProfile> profiles(set.programs.size());
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(model.spec().vocab_size - 1));
  auto random_ids = [&](int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int32_t& t : ids) t = id(rng);
    return ids;
  };
  {
    Session s(model);
    s.op_profiles = &profiles;
    for (int64_t t : set.prefill_sizes) {
      if (s.length() + t + decode_steps > s.context_length()) break;
      s.forward(random_ids(t), LogitsWanted::Last, t);
    }
    std::vector<int32_t> next = random_ids(1);
    for (int64_t i = 0; i < decode_steps && s.length() < s.context_length(); ++i) s.forward(next);
  }
  AuditResult r;
  const BackendInfo backend = model.backend().info();
  r.isa = backend.level;
  r.avx_vnni = backend.runs("avx_vnni");
  for (size_t i = 0; i < set.programs.size(); ++i) {
    // Where each op ran, as the backend placed it.
    const std::vector<OpPlacement>& place = model.executable(i).placement();
    ProgramAudit pa;
    pa.program = set.programs[i].name;
    std::map<std::string, KernelUse> uses;
    for (size_t k = 0; k < place.size(); ++k) {
      KernelUse& u = uses[place[k].kernel];
      u.kernel = place[k].kernel;
      u.fallback = place[k].fallback;
      u.ops += 1;
      const double sec = k < profiles[i].seconds.size() ? profiles[i].seconds[k] : 0.0;
      u.seconds += sec;
      pa.ops += 1;
      pa.seconds += sec;
      if (place[k].fallback) {
        pa.fallback_ops += 1;
        pa.fallback_seconds += sec;
      }
    }
    if (!profiles[i].calls.empty()) pa.calls = profiles[i].calls.front();
    for (auto& [name, u] : uses) pa.kernels.push_back(u);
    std::stable_sort(pa.kernels.begin(), pa.kernels.end(),
                     [](const KernelUse& a, const KernelUse& b) { return a.seconds > b.seconds; });
    r.ops += pa.ops;
    r.fallback_ops += pa.fallback_ops;
    r.seconds += pa.seconds;
    r.fallback_seconds += pa.fallback_seconds;
    r.programs.push_back(std::move(pa));
  }
  return r;
}

}  // namespace tessera

#include "graph/program.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace tessera {

int Program::find_value(const std::string& n) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == n) return static_cast<int>(i);
  return -1;
}

const Value& Program::value(const std::string& n) const {
  const int i = find_value(n);
  if (i < 0) fail(name, n, "the program has no such value");
  return values[i];
}

std::vector<const Program*> ProgramSet::variant(int64_t max_tokens) const {
  std::vector<const Program*> out;
  for (const Program& p : programs)
    if (p.max_tokens == max_tokens) out.push_back(&p);
  std::sort(out.begin(), out.end(), [](const Program* a, const Program* b) { return a->chunk < b->chunk; });
  return out;
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Embed: return "embed";
    case OpKind::RmsNorm: return "rms_norm";
    case OpKind::Linear: return "linear";
    case OpKind::Rope: return "rope";
    case OpKind::Attention: return "attention";
    case OpKind::KvStore: return "kv_store";
    case OpKind::GatedActivation: return "gated_activation";
    case OpKind::Add: return "add";
    case OpKind::SelectRows: return "select_rows";
    case OpKind::Softcap: return "softcap";
    case OpKind::Argmax: return "argmax";
    case OpKind::ShortConv: return "short_conv";
    case OpKind::SliceCols: return "slice_cols";
    case OpKind::Scale: return "scale";
    case OpKind::SplitHeads: return "split_heads";
    case OpKind::CausalConv: return "causal_conv";
    case OpKind::DeltaRule: return "delta_rule";
  }
  return "?";
}

nlohmann::ordered_json program_to_json(const Program& p) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  j["kind"] = p.kind == ProgramKind::Decode ? "decode" : "prefill";
  j["max_tokens"] = p.max_tokens;
  j["chunk"] = p.chunk;
  j["layers"] = {p.layer_begin, p.layer_end};
  auto names = [&](const std::vector<int>& ids) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (int i : ids) a.push_back(p.values[i].name);
    return a;
  };
  j["inputs"] = names(p.inputs);
  j["outputs"] = names(p.outputs);
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const Op& op : p.ops) {
    nlohmann::ordered_json o;
    o["op"] = op_kind_name(op.kind);
    o["in"] = names(op.inputs);
    o["out"] = names(op.outputs);
    if (!op.weights.empty()) o["weights"] = op.weights;
    if (op.layer >= 0) o["layer"] = op.layer;
    ops.push_back(std::move(o));
  }
  j["ops"] = std::move(ops);
  return j;
}

std::vector<std::string> weights_used(const ProgramSet& set) {
  std::set<std::string> names;
  for (const Program& p : set.programs)
    for (const Op& op : p.ops)
      for (const std::string& w : op.weights)
        if (!w.empty()) names.insert(w);
  return {names.begin(), names.end()};
}

}  // namespace tessera

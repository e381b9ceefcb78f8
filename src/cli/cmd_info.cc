// tessera info MODEL [--json]: what a model is (architecture, sizes, tensor
// formats, tokenizer, context length), read from a GGUF, an HF directory, a
// bundle (its manifest) or a pulled model name.
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bundle/bundle_summary.h"
#include "cli/commands.h"
#include "kernels/cpu_isa.h"
#include "model/architectures.h"
#include "model/open_model_source.h"
#include "core/cpu_cores.h"
#include "runtime/model.h"
#include "state/sequence_state.h"
#include "sources/model_summary.h"
#include "tokenizer/tokenizer_summary.h"

namespace tessera::cli {
namespace {

std::string human_count(uint64_t n) {
  if (n >= 1000000000) return fmt::format("{:.2f} B", n / 1e9);
  if (n >= 1000000) return fmt::format("{:.1f} M", n / 1e6);
  if (n >= 1000) return fmt::format("{:.1f} K", n / 1e3);
  return std::to_string(n);
}

void print_human(const nlohmann::json& j) {
  const auto& s = j["spec"];
  std::string layers;
  std::map<std::string, int> kinds;
  for (const auto& k : s["layer_types"]) ++kinds[k.get<std::string>()];
  for (const auto& [k, n] : kinds) layers += fmt::format("{}{} {}", layers.empty() ? "" : ", ", n, k);
  fmt::print("path            {}\n", j["path"].get<std::string>());
  fmt::print("source          {}\n", j["source"].get<std::string>());
  fmt::print("architecture    {} ({})\n", s["arch"].get<std::string>(),
             s["source_architecture"].get<std::string>());
  fmt::print("parameters      {} ({} tensors)\n", human_count(j["parameters"]),
             j["tensors"].get<uint64_t>());
  fmt::print("layers          {} ({})\n", s["num_layers"].get<int64_t>(), layers);
  fmt::print("hidden          {}  ffn {}  vocab {}\n", s["hidden_size"].get<int64_t>(),
             s["intermediate_size"].get<int64_t>(), s["vocab_size"].get<int64_t>());
  // Gemma 4: full-attention layers with their own head size / KV heads.
  const int64_t global_head_dim = s.value("global_head_dim", int64_t{0});
  const int64_t global_kv_heads = s.value("global_num_kv_heads", int64_t{0});
  const bool own_global = (global_head_dim > 0 && global_head_dim != s["head_dim"].get<int64_t>()) ||
                          (global_kv_heads > 0 && global_kv_heads != s["num_kv_heads"].get<int64_t>());
  fmt::print("attention       {} heads, {} kv heads, head_dim {}{}{}\n",
             s["num_heads"].get<int64_t>(), s["num_kv_heads"].get<int64_t>(),
             s["head_dim"].get<int64_t>(),
             s["sliding_window"].get<int64_t>() > 0
                 ? fmt::format(", sliding window {}", s["sliding_window"].get<int64_t>())
                 : "",
             own_global ? fmt::format("; full attention {} kv heads, head_dim {}", global_kv_heads, global_head_dim)
                        : "");
  fmt::print("rope theta      {}\n", s["rope"]["theta"].get<double>());
  fmt::print("context length  {}\n", j["context_length"].get<int64_t>());
  std::string formats;
  for (const auto& [name, f] : j["formats"].items())
    formats += fmt::format("{}{} x{} ({:.1f} MiB)", formats.empty() ? "" : ", ", name,
                           f["tensors"].get<uint64_t>(), f["bytes"].get<uint64_t>() / 1048576.0);
  fmt::print("tensor formats  {}\n", formats);
  const auto& t = j["tokenizer"];
  fmt::print("tokenizer       {}{}{}\n", t["kind"].get<std::string>(),
             t["model"].get<std::string>().empty() ? ""
                                                   : " (" + t["model"].get<std::string>() + ")",
             t["vocab_size"].get<int64_t>() > 0
                 ? fmt::format(", {} tokens", t["vocab_size"].get<int64_t>())
                 : "");
  fmt::print("chat template   {}\n", t["chat_template"].get<bool>() ? "yes" : "no");
  const auto& st = j["state"];
  std::map<std::string, std::pair<int, uint64_t>> by_kind;  // kind -> layers, bytes
  for (const auto& l : st["layers"]) {
    auto& [n, b] = by_kind[l["kind"].get<std::string>()];
    ++n;
    b += l["bytes"].get<uint64_t>();
  }
  std::string parts;
  for (const auto& [kind, nb] : by_kind)
    parts += fmt::format("{}{} {} layers {:.1f} MiB", parts.empty() ? "" : ", ", nb.first, kind, nb.second / 1048576.0);
  fmt::print("state           {:.1f} MiB at {} positions ({} KV; {})\n", st["bytes"].get<uint64_t>() / 1048576.0,
             st["positions"].get<int64_t>(), st["kv_type"].get<std::string>(), parts);
  const auto& rt = j["runtime"];
  fmt::print("runs with       {} threads (physical cores), isa {}, arithmetic {} (--threads, --arithmetic)\n",
             rt["threads"].get<int>(), rt["isa"].get<std::string>(), rt["arithmetic"].get<std::string>());
}

// What one sequence's per-layer state takes at `positions` (state/sequence_state.h):
// KV of full layers grows with the positions, sliding layers stop at their
// ring (window + rollback margin), KV-sharing layers take nothing, conv tails
// a few rows.
nlohmann::json state_summary(const ModelSpec& spec, int64_t positions, KvType kv_type) {
  const int64_t context = std::max<int64_t>(positions, 1);
  const SequenceState state(spec, context, kv_type);
  nlohmann::json layers = nlohmann::json::array();
  uint64_t total = 0;
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    const uint64_t b = state.layer_bytes(l, positions);
    std::string kind = layer_kind_name(spec.layer_types[l]);
    if (layer_shares_kv(spec, l)) kind += " (shared KV)";
    layers.push_back({{"layer", l}, {"kind", kind}, {"bytes", b}});
    total += b;
  }
  return {{"positions", positions}, {"kv_type", kv_type_name(kv_type)}, {"rollback_margin", state.rollback_margin()},
          {"bytes", total}, {"layers", layers}};
}

}  // namespace

void register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a model: GGUF file, HF directory, bundle or pulled name");
  static std::string model;
  static bool json = false;
  static int64_t positions = 0;
  static std::string kv_type = "f32";
  cmd->add_option("model", model, "GGUF path, HF checkpoint directory, bundle directory, or pulled model name")
      ->required();
  cmd->add_flag("--json", json, "Print one JSON object");
  cmd->add_option("--ctx", positions, "Report the per-layer state (KV, rings, conv tails) of a sequence of this many "
                                      "positions (0: the model's context length)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-type", kv_type, "KV element type of that report")->check(CLI::IsMember({"f32", "f16"}));
  cmd->callback([] {
    nlohmann::json j;
    ModelSpec spec;
    if (Bundle::is_bundle(model)) {
      const Bundle bundle = Bundle::open(model);
      spec = bundle.manifest().spec;
      TokenizerSummary tok;
      tok.kind = "none";
      if (bundle.manifest().tokenizer.value("kind", "none") != "none")
        tok = summarize_tokenizer(bundle_tokenizer_path(bundle.manifest(), model));
      j = summarize_bundle(bundle, model, tok);
    } else if (const std::filesystem::path dir(model); std::filesystem::is_directory(dir) &&
               std::filesystem::exists(dir / "config.json") && !std::filesystem::exists(dir / "model.safetensors") &&
               !std::filesystem::exists(dir / "model.safetensors.index.json")) {
      // A config without weights (e.g. fetched alone to size a model before
      // downloading it): the spec and the state it needs, no tensors.
      spec = spec_from_hf_config_file((dir / "config.json").string());
      TokenizerSummary tok;
      tok.kind = "none";
      j = model_summary_json(model, "hf config (no weights)", spec, {}, 0, tok);
    } else {
      const ModelSource src = open_model_source(model);
      spec = src.spec;
      j = summarize_model_source(src, summarize_tokenizer(src.path));
    }
    // What a command that runs the model uses unless told otherwise.
    j["runtime"] = {{"threads", physical_core_count()},
                    {"isa", std::string(isa_name(active_isa()))},
                    {"arithmetic", arithmetic_name(LoadOptions{}.arithmetic)}};
    j["state"] = state_summary(spec, positions > 0 ? positions : spec.context_length, parse_kv_type(kv_type));
    if (json) fmt::print("{}\n", j.dump(2));
    else print_human(j);
  });
}

}  // namespace tessera::cli

// tessera oracle MODEL --record FILE | --check FILE [--corpus prompts.json] [--threads N] [--chunks N] [--arithmetic exact|fast] [--kv-type f32|f16]
//
// Determinism oracle (eval/oracle.h). --record writes the token ids and
// their sha256 for the corpus (atomically). Without --corpus the corpus is
// the Python package's data file tessera/data/oracle_prompts.json: beside the
// executable in an installed wheel (tessera/bin/tessera), else in the source
// tree this binary was built from. --check reruns it and exits 0 if
// every id matches, 1 on the first divergence (printed), 2 on an error.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "core/json_file.h"
#include "eval/oracle.h"

#ifndef TESSERA_SOURCE_DIR
#define TESSERA_SOURCE_DIR "."
#endif

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;

// The default corpus: the first of the places it is shipped that holds it.
std::string default_oracle_corpus() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "data" / "oracle_prompts.json");  // wheel
  candidates.push_back(fs::path(TESSERA_SOURCE_DIR) / "python" / "tessera" / "data" / "oracle_prompts.json");
  std::string looked;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  fail("oracle", "--corpus", "no default corpus found (looked in {}); pass --corpus FILE", looked);
}

}  // namespace

void register_oracle(CLI::App& app) {
  auto* cmd = app.add_subcommand("oracle", "Record or check the determinism oracle of a model");
  static std::string model, record, check, corpus;
  static KernelFlags kernels;
  static int64_t chunks = 0;
  cmd->add_option("model", model, "Bundle, GGUF, HF directory or pulled name")->required();
  auto* rec = cmd->add_option("--record", record, "Write the oracle file");
  auto* chk = cmd->add_option("--check", check, "Compare with this oracle file");
  rec->excludes(chk);
  cmd->add_option("--corpus", corpus, "Prompt corpus (JSON; default: the package's tessera/data/oracle_prompts.json)");
  cmd->add_option("--chunks", chunks, "Layer chunks per step (0 = the bundle's)")->capture_default_str();
  // The oracle pins today's bits: the exact level unless told otherwise.
  kernels.arithmetic = "exact";
  kernels.add_to(*cmd);
  cmd->callback([] {
    if (record.empty() == check.empty()) fail("options", "oracle", "give exactly one of --record and --check");
    const std::string corpus_file = corpus.empty() ? default_oracle_corpus() : corpus;  // before the (slow) load
    LoadOptions o;
    o.chunks = chunks;
    kernels.apply(o);
    auto m = Model::load(model, o);
    const nlohmann::ordered_json fresh = run_oracle(*m, load_oracle_corpus(corpus_file));
    if (!record.empty()) {
      const std::string tmp = record + ".tmp";
      {
        std::ofstream out(tmp, std::ios::binary);
        out << fresh.dump(1) << "\n";
        if (!out) fail(tmp, "", "write failed");
      }
      std::filesystem::rename(tmp, record);
      fmt::print("recorded {} prompts, sha256 {}\n", fresh["results"].size(), fresh["sha256"].get<std::string>());
      return;
    }
    const nlohmann::json recorded = read_json_file(check, "the oracle file");
    const OracleMismatch r = compare_oracle(recorded, fresh, check);
    if (!r.match) {
      fmt::print("DIVERGED: {}\n", r.message);
      set_exit_code(1);
      return;
    }
    fmt::print("match: {} prompts, sha256 {}\n", fresh["results"].size(), fresh["sha256"].get<std::string>());
  });
}

}  // namespace tessera::cli

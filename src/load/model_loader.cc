#include "load/model_loader.h"

#include <fmt/format.h>

#include "bundle/bundle.h"
#include "convert/bundle_cache.h"
#include "core/error.h"
#include "core/cpu_cores.h"
#include "sources/model_source.h"

namespace tessera {

std::unique_ptr<Model> load_model_for_running(const std::string& name_or_path, const LoadOptions& requested,
                                              bool reference, bool announce) {
  if (requested.threads < 0 || requested.threads > 1024)
    fail("options", "threads", "must be between 1 and 1024 (0: the physical cores), got {}", requested.threads);
  LoadOptions load = requested;
  load.threads = resolve_thread_count(requested.threads);
  if (Bundle::is_bundle(name_or_path)) {
    if (reference)
      fail(name_or_path, "--reference", "is a bundle; the reference path runs a GGUF file or an HF directory");
    if (announce) fmt::print(stderr, "using bundle {}\n", name_or_path);
    return Model::load(name_or_path, load);
  }
  if (reference) {
    const std::string path = resolve_model_path(name_or_path);
    if (announce) fmt::print(stderr, "reference path: {} dequantized to f32\n", path);
    return Model::load(path, load);
  }
  BundleCacheOptions o;
  o.threads = load.threads;
  o.progress = announce;
  CachedBundle b = default_bundle(name_or_path, o);
  const auto say = [&] {
    if (announce)
      fmt::print(stderr, "using bundle {} ({} layers, {} from {})\n", b.directory, b.weights_format,
                 b.converted ? "just converted" : "converted", b.source_path);
  };
  say();
  try {
    return Model::load(b.directory, load);
  } catch (const Error& e) {
    // A bundle whose programs this Tessera builds differently (an upgrade
    // that changed the graph but not kConverterVersion): convert again.
    if (e.subject() != "programs") throw;
    if (announce) fmt::print(stderr, "{}\n", e.what());
    o.rebuild = true;
    b = default_bundle(name_or_path, o);
    say();
    return Model::load(b.directory, load);
  }
}

}  // namespace tessera

// The one way in to a runnable Model: a bundle as is, a source through its
// cached default bundle (convert/bundle_cache.h), or a source's exact
// reference path. Every front door (CLI, engine, Python, tools) and the draft
// models (load/draft_models.h) open models here, never from inside a
// generation.
#pragma once

#include <memory>
#include <string>

#include "runtime/model.h"

namespace tessera {

// What `tessera run` / `chat` / `bench` and tessera.Model load:
//   * a bundle directory: that bundle;
//   * `reference`: the source dequantized to f32 (Model::load as is), the
//     exact reference path;
//   * else the source's default bundle (default_bundle; conversion threads
//     = load.threads), loaded with `load`.
// `announce`: one line on stderr saying which path and bundle were used.
std::unique_ptr<Model> load_model_for_running(const std::string& name_or_path, const LoadOptions& load,
                                              bool reference, bool announce = true);

}  // namespace tessera

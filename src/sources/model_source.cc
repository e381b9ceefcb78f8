#include "sources/model_source.h"

#include <filesystem>

#include "core/error.h"
#include "sources/model_registry.h"

namespace fs = std::filesystem;

namespace tessera {

const TensorView* ModelSource::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string resolve_model_path(const std::string& name_or_path) {
  std::error_code ec;
  const fs::path p(name_or_path);
  if (fs::is_directory(p, ec)) return name_or_path;
  if (fs::is_regular_file(p, ec)) {
    if (p.extension() == ".safetensors" || p.filename() == "config.json")
      return p.parent_path().empty() ? std::string(".") : p.parent_path().string();
    return name_or_path;
  }
  if (const RegisteredModel* m = find_registered_model(name_or_path)) {
    const std::string path = pulled_model_path(*m, tessera_home());
    if (!fs::is_regular_file(path, ec))
      fail(name_or_path, "", "model is not pulled yet: run `tessera pull {}`", m->name);
    return path;
  }
  std::string known;
  for (const auto& m : registered_models()) known += (known.empty() ? "" : ", ") + m.name;
  fail(name_or_path, "", "no such file or directory, and not a known model name ({})", known);
}

}  // namespace tessera

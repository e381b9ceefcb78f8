#include "core/json_file.h"

#include <fstream>

#include "core/error.h"

namespace tessera {

nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "", "cannot open {}", what);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(path, "", "invalid JSON: {}", e.what());
  }
}

}  // namespace tessera

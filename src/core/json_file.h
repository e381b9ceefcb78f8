// Reading a whole JSON file with errors that name the file.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tessera {

// Throws Error "cannot open <what>" or "invalid JSON: ..." naming `path`.
nlohmann::json read_json_file(const std::string& path, std::string_view what);

}  // namespace tessera

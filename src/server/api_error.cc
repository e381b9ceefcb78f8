#include "server/api_error.h"

namespace tessera::server {

ApiError::ApiError(int status_, std::string message, std::string type_, std::string param_, std::string code_)
    : std::runtime_error(std::move(message)),
      status(status_),
      type(std::move(type_)),
      param(std::move(param_)),
      code(std::move(code_)) {}

nlohmann::ordered_json ApiError::body() const {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s); };
  return {{"error", {{"message", what()}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param), std::move(code));
}

ApiError wrong_type(const std::string& param, const std::string& expected) {
  return bad_request("'" + param + "' must be " + expected, param, "invalid_type");
}

}  // namespace tessera::server

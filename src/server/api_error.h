// Errors as the OpenAI API returns them: an HTTP status and a JSON body
// {"error": {"message", "type", "param", "code"}}, which the official
// clients turn into their exception classes (400 BadRequestError, 401
// AuthenticationError, 404 NotFoundError, 413 / 503 APIStatusError, ...).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "");

  int status;
  std::string type, param, code;

  nlohmann::ordered_json body() const;
};

// The common ones.
ApiError bad_request(std::string message, std::string param = "", std::string code = "invalid_value");
ApiError wrong_type(const std::string& param, const std::string& expected);

}  // namespace tessera::server

#pragma once
// An error answered to the client in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
#include <stdexcept>
#include <string>

namespace bonsai::server {

struct ApiError : std::runtime_error {
  int status;        // HTTP status
  std::string type;  // "invalid_request_error", "authentication_error", ...
  std::string param; // the request field at fault; "" for none
  std::string code;  // machine-readable code ("model_not_found"); "" for none

  ApiError(int status, std::string type, const std::string &message, std::string param = {},
           std::string code = {})
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
};

// A 400 invalid_request_error about `param`.
inline ApiError bad_request(const std::string &message, std::string param = {},
                            std::string code = {}) {
  return ApiError(400, "invalid_request_error", message, std::move(param), std::move(code));
}

} // namespace bonsai::server

#include "base/api_errors.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

const char *anthropic_error_type(int status) {
  switch (status) {
  case 401:
    return "authentication_error";
  case 403:
    return "permission_error";
  case 404:
    return "not_found_error";
  case 413:
    return "request_too_large";
  case 429:
    return "rate_limit_error";
  case 503:
    return "overloaded_error";
  default:
    return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string openai_error_body(const ApiError &error) {
  return json({{"error",
                {{"message", error.what()},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}})
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

ErrorShape error_shape_of(std::string_view path) {
  if (path == "/v1/messages" || path.starts_with("/v1/messages/"))
    return ErrorShape::anthropic;
  if (path.starts_with("/api/"))
    return ErrorShape::ollama;
  return ErrorShape::openai;
}

json anthropic_error_json(const ApiError &error) {
  return {{"type", anthropic_error_type(error.status)}, {"message", error.what()}};
}

std::string error_body(const ApiError &error, ErrorShape shape) {
  switch (shape) {
  case ErrorShape::anthropic:
    return json{{"type", "error"}, {"error", anthropic_error_json(error)}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
  case ErrorShape::ollama:
    return json{{"error", error.what()}}.dump(-1, ' ', false, json::error_handler_t::replace);
  case ErrorShape::openai:
    break;
  }
  return openai_error_body(error);
}

} // namespace bonsai::server

#pragma once
// Error bodies in the shape of the API a request was made to, chosen by its
// path (docs/server.md, "Errors"):
//   OpenAI (/v1/chat/completions, /v1/responses, ...):
//     {"error": {"message", "type", "param", "code"}}
//   Anthropic (/v1/messages...):
//     {"type": "error", "error": {"type", "message"}}, the type by status
//   Ollama (/api/...): {"error": "message"}
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/api_error.hpp"

namespace bonsai::server {

enum class ErrorShape { openai, anthropic, ollama };

ErrorShape error_shape_of(std::string_view path);

std::string error_body(const ApiError &error, ErrorShape shape);
// OpenAI's {"error": {"message", "type", "param", "code"}}.
inline std::string error_body(const ApiError &error) {
  return error_body(error, ErrorShape::openai);
}

// Anthropic's error object {"type", "message"} for `error` (the type from
// its HTTP status, as Anthropic names them).
nlohmann::json anthropic_error_json(const ApiError &error);

} // namespace bonsai::server

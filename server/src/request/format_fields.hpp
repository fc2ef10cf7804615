#pragma once
// The fields that ask for constrained decoding (docs/structured-output.md):
// `response_format` (json_object, json_schema) and a `tool_choice` of
// "required" or a named function. Each becomes a ReplyFormat; the schema
// text keeps the client's property order, which the reply follows.
#include <string>

#include <nlohmann/json.hpp>

#include "bonsai/engine.hpp"
#include "request/json_limits.hpp"

namespace bonsai::server {

struct FormatRequest {
  ReplyFormat format;
  std::string param; // the field a FormatError is reported against
};

// Whether the request asks for a format (and so needs its schemas in order).
bool wants_format(const nlohmann::json &body);

// `ordered` is the body parsed with keys in order (needed when
// wants_format()). Throws ApiError 400 naming the field.
FormatRequest format_request(const nlohmann::json &body, const nlohmann::ordered_json *ordered,
                             bool parallel_tool_calls);

} // namespace bonsai::server

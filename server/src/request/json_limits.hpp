#pragma once
// Parses a request body as JSON within JsonLimits, checked event by event
// while parsing: nesting that would make any later recursive walk of the
// document (a copy, a dump) overflow the stack is refused before it is
// built, and so are strings, arrays and objects past their limits.
#include <string_view>

#include <nlohmann/json.hpp>

#include "bonsai/server.hpp"

namespace bonsai::server {

// Throws ApiError 400 naming the problem: malformed JSON, invalid UTF-8, a
// number past double's range, or a limit passed.
nlohmann::json parse_json_within(std::string_view text, const JsonLimits &limits);
// The same, keeping the order of object keys (JSON Schema properties are
// written in the order the client gave).
nlohmann::ordered_json parse_ordered_json_within(std::string_view text, const JsonLimits &limits);

} // namespace bonsai::server

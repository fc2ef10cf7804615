#pragma once
// Reads the body of OpenAI's POST /v1/responses into the internal request
// (docs/server.md, "OpenAI Responses API"). bonsai serve keeps no state:
// "store": true, "previous_response_id", "conversation" and "background"
// are refused with a 400 that says so. Every problem is an ApiError 400
// naming the field.
#include <string_view>

#include <nlohmann/json.hpp>

#include "request/completion_spec.hpp"

namespace bonsai::server {

struct ResponsesRequest {
  CompletionSpec spec;
  // The request's settings as the Response object repeats them
  // (instructions, max_output_tokens, text, tool_choice, tools, reasoning,
  // metadata, user, parallel_tool_calls, temperature, top_p, truncation).
  nlohmann::json echo;
};

ResponsesRequest read_responses_request(std::string_view body, const RequestContext &context);

} // namespace bonsai::server

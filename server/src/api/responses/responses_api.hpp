#pragma once
// OpenAI's Responses API on bonsai serve (docs/server.md, "OpenAI Responses
// API"): POST /v1/responses answered as a Response object, or as its typed
// event stream (response.created, response.output_item.added,
// response.output_text.delta, response.function_call_arguments.delta, ...,
// response.completed or response.incomplete). Stateless.
#include <string_view>

#include "reply/reply_writer.hpp"

namespace bonsai::server {

ParsedRequest parse_responses_request(std::string_view body, const RequestContext &context);

} // namespace bonsai::server

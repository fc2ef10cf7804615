#pragma once
// Reads the body of OpenAI's POST /v1/responses into the internal request
// (docs/server.md, "OpenAI Responses API"). bonsai serve keeps no state:
// "store": true, "previous_response_id", "conversation" and "background"
// are refused with a 400 that says so. Every problem is an ApiError 400
// naming the field.
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "request/completion_spec.hpp"

namespace bonsai::server {

// A namespace's function as the model sees it: "NAMESPACE__NAME", the flat
// spelling Codex itself uses where a namespace cannot be kept apart.
std::string flat_tool_name(const std::string &space, const std::string &name);
// Flat name -> (namespace, name) of each namespaced function offered.
using NamespacedNames = std::map<std::string, std::pair<std::string, std::string>>;

struct ResponsesRequest {
  CompletionSpec spec;
  // The request's settings as the Response object repeats them
  // (instructions, max_output_tokens, text, tool_choice, tools, reasoning,
  // metadata, user, parallel_tool_calls, temperature, top_p, truncation).
  nlohmann::json echo;
  // reasoning.summary asked for: the reasoning item gives the think block as
  // summary parts (and the reasoning_summary_* events).
  bool reasoning_summary = false;
  // The namespaced functions: a call of one is answered with its name and
  // namespace apart, as the client offered it.
  NamespacedNames namespaced;
};

ResponsesRequest read_responses_request(std::string_view body, const RequestContext &context);

} // namespace bonsai::server

#pragma once
// Reads the body of Anthropic's POST /v1/messages (and of
// /v1/messages/count_tokens, which takes the same prompt fields) into the
// internal request (docs/server.md, "Anthropic Messages API"). Every problem
// is an ApiError 400 naming the field.
#include <string_view>

#include "request/completion_spec.hpp"

namespace bonsai::server {

struct MessagesRequest {
  CompletionSpec spec;
  // The request asked for thinking: the <think> block comes back as
  // `thinking` content blocks. Otherwise thinking is off in the prompt and
  // any think block the model writes anyway is dropped.
  bool show_thinking = false;
};

enum class MessagesEndpoint { create, count_tokens };

MessagesRequest read_messages_request(std::string_view body, const RequestContext &context,
                                      MessagesEndpoint endpoint);

} // namespace bonsai::server

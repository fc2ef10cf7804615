#pragma once
// Replies of POST /v1/chat/completions and /v1/completions in OpenAI's
// shapes: one ChoiceAssembly per choice, chunks as server-sent events ending
// with [DONE], or the whole completion.
#include "reply/reply_writer.hpp"

namespace bonsai::server {

// The chat endpoint's and the legacy completions endpoint's requests.
ParsedRequest parse_chat_completion(std::string_view body, const RequestContext &context);
ParsedRequest parse_text_completion(std::string_view body, const RequestContext &context);

} // namespace bonsai::server

#pragma once
// Anthropic's Messages API on bonsai serve (docs/server.md, "Anthropic
// Messages API"): POST /v1/messages answered as a Message or as its event
// stream (message_start, content_block_start / _delta / _stop, message_delta,
// message_stop), and POST /v1/messages/count_tokens.
#include <string>
#include <string_view>

#include "bonsai/engine.hpp"
#include "reply/reply_writer.hpp"

namespace bonsai::server {

ParsedRequest parse_messages_request(std::string_view body, const RequestContext &context);

// {"input_tokens": N}: the prompt the same request would run, tokenized.
std::string count_tokens_body(const Engine &engine, const RequestContext &context,
                              std::string_view body);

} // namespace bonsai::server

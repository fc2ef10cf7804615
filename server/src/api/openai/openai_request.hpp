#pragma once
// Parses and checks the JSON bodies of POST /v1/chat/completions and
// POST /v1/completions into what the scheduler runs. Every problem is an
// ApiError (400) naming the field: malformed
// JSON, wrong types, values out of range, unknown fields, options bonsai does
// not support, and every limit of RequestLimits (checked before any prompt is
// tokenized).
#include <string>
#include <string_view>

#include "request/completion_spec.hpp"

namespace bonsai::server {

CompletionSpec parse_completion_request(Endpoint endpoint, std::string_view body,
                                        const RequestContext &context);

} // namespace bonsai::server

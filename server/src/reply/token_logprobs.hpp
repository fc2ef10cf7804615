#pragma once
// Tokens' log probabilities as the newer OpenAI shapes list them (Chat
// Completions' logprobs.content, the Responses API's output_text logprobs):
// one {"token", "logprob", "bytes", "top_logprobs"} per token.
#include <vector>

#include <nlohmann/json.hpp>

#include "bonsai/engine.hpp"

namespace bonsai::server {

// A token's bytes may be part of a UTF-8 character: "token" is its text with
// U+FFFD for such bytes (as the body is written), "bytes" the exact bytes.
nlohmann::json token_logprob_list(const std::vector<StepLogprobs> &entries);

} // namespace bonsai::server

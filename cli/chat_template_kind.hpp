#pragma once
// What `bonsai info` says about a model's chat template. Kept apart from the
// engine API so core's chat-template header is only included here.
#include <string>

namespace bonsai::cli {

// "Qwen3 ChatML (with <think>)" or "plain ChatML fallback: <why>".
std::string describe_chat_template(const std::string &template_text);

} // namespace bonsai::cli

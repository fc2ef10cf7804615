#pragma once
// Chat prompts for run and chat, through the engine's chat template.
#include <cstdint>
#include <span>
#include <vector>

#include "bonsai/engine.hpp"

namespace bonsai::cli {

// The conversation in the model's chat template with the assistant turn
// opened, as token ids: only the template's markers become control tokens,
// so text typed into a message cannot forge a turn. `think` false pre-fills
// an empty "<think>\n\n</think>\n\n" block, exactly what Qwen3's template
// emits for enable_thinking=false, so the model answers without reasoning
// first. Throws InvalidArgument (unknown role, invalid UTF-8).
std::vector<int32_t> chat_prompt_tokens(const Engine &engine, std::span<const ChatMessage> messages,
                                        bool think);

} // namespace bonsai::cli

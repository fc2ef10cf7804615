#pragma once
// Chat prompts for run and chat, through the engine's chat template.
#include <span>
#include <string>

#include "bonsai/engine.hpp"

namespace bonsai::cli {

// The conversation in the model's chat template with the assistant turn
// opened. `think` false pre-fills an empty "<think>\n\n</think>\n\n" block,
// exactly what Qwen3's template emits for enable_thinking=false, so the
// model answers without reasoning first. Throws ModelError when the model
// has no usable template.
std::string format_chat_prompt(const Engine &engine, std::span<const ChatMessage> messages,
                               bool think);

} // namespace bonsai::cli

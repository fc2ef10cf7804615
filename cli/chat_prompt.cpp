#include "chat_prompt.hpp"

namespace bonsai::cli {

std::vector<int32_t> chat_prompt_tokens(const Engine &engine, std::span<const ChatMessage> messages,
                                        bool think) {
  std::vector<int32_t> tokens = engine.tokenize_chat(messages, /*add_generation_prompt=*/true);
  // Added here rather than by the template, so that the block is there with
  // the plain ChatML fallback too. <think> and </think> are user-defined
  // tokens, so the ids are those of the whole text tokenized at once.
  if (!think) {
    const std::vector<int32_t> no_think = engine.tokenize("<think>\n\n</think>\n\n", false);
    tokens.insert(tokens.end(), no_think.begin(), no_think.end());
  }
  return tokens;
}

} // namespace bonsai::cli

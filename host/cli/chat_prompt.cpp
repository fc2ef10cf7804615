#include "chat_prompt.hpp"

namespace bonsai::cli {

std::string format_chat_prompt(const Engine &engine, std::span<const ChatMessage> messages,
                               bool think) {
  std::string text = engine.apply_chat_template(messages, /*add_generation_prompt=*/true);
  if (!think)
    text += "<think>\n\n</think>\n\n";
  return text;
}

} // namespace bonsai::cli

#pragma once
// A chat conversation on disk (chat's /save and /load), as JSON:
//   {"format": "bonsai-chat", "version": 1,
//    "messages": [{"role": "system" | "user" | "assistant", "content": "..."}]}
// A bare array of such messages (OpenAI's shape) loads too.
#include <filesystem>
#include <vector>

#include "bonsai/core/chat_template.hpp"
#include "bonsai/core/error.hpp"

namespace bonsai::cli {

// Throws bonsai::Error naming the file when it cannot be written.
void save_conversation(const std::filesystem::path &path, const std::vector<ChatMessage> &messages);

// Throws bonsai::Error naming the file and what is wrong (not JSON, a
// message without a role, an unknown role, content that is not a string).
std::vector<ChatMessage> load_conversation(const std::filesystem::path &path);

} // namespace bonsai::cli

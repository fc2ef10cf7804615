#include "conversation_file.hpp"

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "text_file.hpp"

namespace bonsai::cli {
namespace {

using nlohmann::json;

bool known_role(const std::string &role) {
  return role == "system" || role == "user" || role == "assistant";
}

} // namespace

void save_conversation(const std::filesystem::path &path,
                       const std::vector<ChatMessage> &messages) {
  json doc = {{"format", "bonsai-chat"}, {"version", 1}, {"messages", json::array()}};
  for (const ChatMessage &m : messages)
    doc["messages"].push_back({{"role", m.role}, {"content", m.content}});
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  // Invalid UTF-8 never reaches here (the chat refuses such lines), but a
  // reply cut mid-character could: replace rather than throw.
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  if (!out.flush())
    throw Error(path.string() + ": cannot write the conversation");
}

std::vector<ChatMessage> load_conversation(const std::filesystem::path &path) {
  const std::string text = read_text_file(path.string(), "/load");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception &e) { // syntax, or a number out of range
    throw Error(path.string() + ": not a JSON conversation: " + e.what());
  }
  const json *list = &doc;
  if (doc.is_object()) {
    const bool ours = doc.contains("format") && doc["format"].is_string() &&
                      doc["format"].get<std::string>() == "bonsai-chat";
    if (!ours || !doc.contains("messages"))
      throw Error(path.string() + ": a JSON object without \"format\": \"bonsai-chat\" and "
                                  "\"messages\"");
    // A later format may mean something else by the same fields.
    if (const auto version = doc.find("version");
        version != doc.end() && !(version->is_number_integer() && *version == 1))
      throw Error(path.string() + ": a conversation of version " +
                  version->dump(-1, ' ', false, json::error_handler_t::replace) +
                  "; this bonsai reads version 1");
    list = &doc["messages"];
  }
  if (!list->is_array())
    throw Error(path.string() + ": the messages must be a JSON array");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < list->size(); ++i) {
    const json &m = (*list)[i];
    const std::string where = path.string() + ": message " + std::to_string(i + 1);
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw Error(where + " has no \"role\" string");
    const std::string role = m["role"].get<std::string>();
    if (!known_role(role))
      throw Error(where + " has role '" + role + "'; expected system, user or assistant");
    if (!m.contains("content") || !m["content"].is_string())
      throw Error(where + " has no \"content\" string");
    if (role == "system" && i != 0)
      throw Error(where + " is a system message; only the first may be one");
    messages.push_back({role, m["content"].get<std::string>()});
  }
  return messages;
}

} // namespace bonsai::cli

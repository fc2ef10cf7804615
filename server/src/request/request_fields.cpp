#include "request/request_fields.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/api_error.hpp"
#include "request/json_limits.hpp"
#include "request/tool_fields.hpp"

namespace bonsai::server {

using json = nlohmann::json;

std::string type_name(const json &value) {
  return value.is_number_integer() ? "integer" : value.type_name();
}

// The field, or nullptr when absent or null (OpenAI clients may send null
// for "not set").
const json *field(const json &body, const char *name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number_field(const json &body, const char *name, double min, double max, double fallback) {
  const json *value = field(body, name);
  if (value == nullptr)
    return fallback;
  if (!value->is_number())
    throw bad_request(fmt::format("'{}' must be a number, not {}", name, type_name(*value)), name);
  const double v = value->get<double>();
  if (!std::isfinite(v) || v < min || v > max)
    throw bad_request(fmt::format("'{}' must be between {} and {}, got {}", name, min, max, v),
                      name);
  return v;
}

int64_t integer_field(const json &body, const char *name, int64_t min, int64_t max,
                      int64_t fallback) {
  const json *value = field(body, name);
  if (value == nullptr)
    return fallback;
  if (!value->is_number_integer())
    throw bad_request(fmt::format("'{}' must be an integer, not {}", name, type_name(*value)),
                      name);
  // nlohmann keeps non-negative integers as unsigned: both bounds apply to
  // either representation.
  const bool out_of_range =
      value->is_number_unsigned()
          ? value->get<uint64_t>() > static_cast<uint64_t>(max) ||
                (min > 0 && value->get<uint64_t>() < static_cast<uint64_t>(min))
          : value->get<int64_t>() < min || value->get<int64_t>() > max;
  if (out_of_range)
    throw bad_request(
        fmt::format("'{}' must be between {} and {}, got {}", name, min, max, value->dump()), name);
  return value->get<int64_t>();
}

bool bool_field(const json &body, const char *name, bool fallback) {
  const json *value = field(body, name);
  if (value == nullptr)
    return fallback;
  if (!value->is_boolean())
    throw bad_request(fmt::format("'{}' must be a boolean, not {}", name, type_name(*value)), name);
  return value->get<bool>();
}

std::string string_field(const json &body, const char *name) {
  const json *value = field(body, name);
  if (value == nullptr)
    return {};
  if (!value->is_string())
    throw bad_request(fmt::format("'{}' must be a string, not {}", name, type_name(*value)), name);
  return value->get<std::string>();
}

const json &nonempty_list(const json &body, const char *name) {
  const json *list = field(body, name);
  if (list == nullptr)
    throw bad_request(fmt::format("'{}' is required", name), name);
  if (!list->is_array() || list->empty())
    throw bad_request(fmt::format("'{}' must be a non-empty list", name), name);
  return *list;
}

json object_body(std::string_view text, const JsonLimits &limits) {
  json body = parse_json_within(text, limits);
  if (!body.is_object())
    throw bad_request("The request body must be a JSON object");
  return body;
}

namespace {

std::string message_content(const json &message, size_t index) {
  const std::string where = fmt::format("messages[{}].content", index);
  const auto it = message.find("content");
  if (it == message.end() || it->is_null())
    return {};
  if (it->is_string())
    return it->get<std::string>();
  if (!it->is_array())
    throw bad_request(fmt::format("'{}' must be a string or a list of parts", where), where);
  std::string text;
  for (size_t k = 0; k < it->size(); ++k) {
    const json &part = (*it)[k];
    const std::string at = fmt::format("{}[{}]", where, k);
    const json *type = part.is_object() ? field(part, "type") : nullptr;
    if (type == nullptr || !type->is_string())
      throw bad_request(fmt::format("'{}' must be a part such as {{\"type\": \"text\", "
                                    "\"text\": ...}}",
                                    at),
                        at);
    const std::string &kind = type->get_ref<const std::string &>();
    if (kind == "text") {
      const json *part_text = field(part, "text");
      if (part_text == nullptr || !part_text->is_string())
        throw bad_request(fmt::format("'{}.text' must be a string", at), at + ".text");
      text += part_text->get_ref<const std::string &>();
    } else if (const std::string_view what = media_kind(kind); !what.empty()) {
      text += left_out_note(what, at);
    } else {
      note_ignored_field(at + " (type " + kind.substr(0, 32) + ")");
    }
  }
  return text;
}

// The fields a message may have: OpenAI's, and what SDKs keep on an assistant
// reply they send back (refusal, parsed, annotations, audio, function_call:
// ignored without a note; reasoning_content / reasoning: used).
const std::initializer_list<std::string_view> kMessageFields = {
    "role",      "content", "name",   "tool_calls",  "tool_call_id", "reasoning_content",
    "reasoning", "refusal", "parsed", "annotations", "audio",        "function_call"};

} // namespace

// An assistant message's "tool_calls": [{id?, type: "function", function:
// {name, arguments}}], arguments a JSON text (as OpenAI sends it) or an object.
std::vector<ToolCall> message_tool_calls(const json &calls, const std::string &where) {
  if (!calls.is_array())
    throw bad_request(fmt::format("'{}' must be a list", where), where);
  std::vector<ToolCall> out;
  for (size_t k = 0; k < calls.size(); ++k) {
    const std::string at = fmt::format("{}[{}]", where, k);
    const json &call = calls[k];
    const json *function = call.is_object() ? field(call, "function") : nullptr;
    if (function == nullptr || !function->is_object())
      throw bad_request(fmt::format("'{}.function' must be an object", at), at + ".function");
    const json *name = field(*function, "name");
    if (name == nullptr || !name->is_string() || name->get_ref<const std::string &>().empty())
      throw bad_request(fmt::format("'{}.function.name' must be a non-empty string", at),
                        at + ".function.name");
    const json *arguments = field(*function, "arguments");
    std::string text = "{}";
    if (arguments != nullptr && arguments->is_string())
      text = arguments->get<std::string>();
    else if (arguments != nullptr && arguments->is_object())
      text = python_json(*arguments);
    else if (arguments != nullptr)
      throw bad_request(
          fmt::format("'{}.function.arguments' must be a JSON string or an object", at),
          at + ".function.arguments");
    out.push_back({name->get<std::string>(), std::move(text)});
  }
  return out;
}

std::vector<ChatMessage> chat_messages(const json &body) {
  const json &messages = nonempty_list(body, "messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json &m = messages[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object())
      throw bad_request(fmt::format("'{}' must be an object", where), where);
    ignore_unknown_fields(m, kMessageFields, where);
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      throw bad_request(fmt::format("'{}.role' must be a string", where), where + ".role");
    std::string r = role->get<std::string>();
    if (r == "developer")
      r = "system"; // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      throw bad_request(fmt::format("'{}.role' must be system, developer, user, assistant or "
                                    "tool, not '{}'",
                                    where, r),
                        where + ".role");
    ChatMessage message{r, message_content(m, i)};
    if (const json *calls = field(m, "tool_calls"); calls != nullptr) {
      if (r != "assistant")
        throw bad_request(fmt::format("'{}.tool_calls' belongs to assistant messages", where),
                          where + ".tool_calls");
      message.tool_calls = message_tool_calls(*calls, where + ".tool_calls");
    }
    // An assistant reply sent back as the client got it: its reasoning goes
    // back in the think block the template expects.
    for (const char *name : {"reasoning_content", "reasoning"})
      if (const json *reasoning = field(m, name); reasoning != nullptr) {
        if (!reasoning->is_string())
          throw bad_request(fmt::format("'{}.{}' must be a string", where, name),
                            where + "." + name);
        if (r == "assistant" && !reasoning->get_ref<const std::string &>().empty())
          message.content =
              "<think>\n" + reasoning->get<std::string>() + "\n</think>\n\n" + message.content;
      }
    if (const json *id = field(m, "tool_call_id"); id != nullptr && !id->is_string())
      throw bad_request(fmt::format("'{}.tool_call_id' must be a string", where),
                        where + ".tool_call_id");
    out.push_back(std::move(message));
  }
  return out;
}

bool thinking(const json &body) {
  bool enable = bool_field(body, "enable_thinking", true);
  if (const json *kwargs = field(body, "chat_template_kwargs"); kwargs != nullptr) {
    if (!kwargs->is_object())
      throw bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    ignore_unknown_fields(*kwargs, {"enable_thinking"}, "chat_template_kwargs");
    enable = bool_field(*kwargs, "enable_thinking", enable);
  }
  return enable;
}

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
  if (name == "reasoning_content" || name == "deepseek")
    return ReasoningFormat::reasoning_content;
  if (name == "reasoning")
    return ReasoningFormat::reasoning;
  if (name == "none")
    return ReasoningFormat::none;
  return std::nullopt;
}

ReasoningFormat reasoning_format(const json &body, ReasoningFormat fallback) {
  const std::string name = string_field(body, "reasoning_format");
  if (name.empty() || name == "auto")
    return fallback;
  if (const auto format = reasoning_format_from_name(name))
    return *format;
  constexpr size_t kShown = 32; // of an unknown name, echoed back
  throw bad_request(fmt::format("'reasoning_format' must be \"reasoning_content\", "
                                "\"reasoning\", \"none\" or \"auto\", not \"{}\"",
                                name.size() > kShown ? name.substr(0, kShown) + "..." : name),
                    "reasoning_format");
}

} // namespace bonsai::server

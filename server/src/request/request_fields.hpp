#pragma once
// Reading the fields of a JSON request body: each helper throws an ApiError
// (400) that names the field for a wrong type or a value out of range. Used
// by every endpoint that takes a body (completions, /tokenize, ...).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bonsai/engine.hpp"
#include "bonsai/server.hpp"
#include "request/field_notes.hpp"

namespace bonsai::server {

// "integer" for whole numbers, else nlohmann's type name ("string", ...).
std::string type_name(const nlohmann::json &value);
// The field, or nullptr when absent or null (OpenAI clients may send null
// for "not set").
const nlohmann::json *field(const nlohmann::json &body, const char *name);
double number_field(const nlohmann::json &body, const char *name, double min, double max,
                    double fallback);
int64_t integer_field(const nlohmann::json &body, const char *name, int64_t min, int64_t max,
                      int64_t fallback);
bool bool_field(const nlohmann::json &body, const char *name, bool fallback);
// "" when absent.
std::string string_field(const nlohmann::json &body, const char *name);
// body[name], which must be a non-empty list.
const nlohmann::json &nonempty_list(const nlohmann::json &body, const char *name);
// The body as a JSON object, parsed within the limits.
nlohmann::json object_body(std::string_view text, const JsonLimits &limits);
// "messages": a non-empty list of {role, content, name?}; roles system
// (or developer), user, assistant (with tool_calls?), tool (tool_call_id?);
// content a string, parts or null. Text parts are read; an image, audio or
// file part becomes a short note that it was left out; other fields and
// part types are ignored (field_notes.hpp). An unknown role is refused.
std::vector<ChatMessage> chat_messages(const nlohmann::json &body);
// An assistant message's "tool_calls": [{id?, type?, function: {name,
// arguments}}], arguments a JSON text (as OpenAI sends them) or an object
// (as Ollama does); `where` names the list.
std::vector<ToolCall> message_tool_calls(const nlohmann::json &calls, const std::string &where);
// enable_thinking, at the top level or in chat_template_kwargs (default true).
bool thinking(const nlohmann::json &body);
// "reasoning_format": "reasoning_content" (or llama-server's "deepseek"),
// "reasoning", "none", or "auto" / absent for the server's `fallback`.
ReasoningFormat reasoning_format(const nlohmann::json &body, ReasoningFormat fallback);
// The names --reasoning-format and "reasoning_format" take; nullopt for another.
std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);

} // namespace bonsai::server

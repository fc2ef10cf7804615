#include "api/anthropic/anthropic_request.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/api_error.hpp"
#include "request/chat_request_parts.hpp"
#include "request/json_limits.hpp"
#include "request/request_fields.hpp"
#include "request/tool_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The fields of a create request. metadata, service_tier, betas,
// context_management and container are what Anthropic's clients (Claude
// Code among them) send and what changes nothing here; they are checked for
// their type. Any other field is ignored and named in the answer's
// Bonsai-Ignored-Fields header (field_notes.hpp).
const std::initializer_list<std::string_view> kCreateFields = {
    "model",          "max_tokens",    "messages",    "system",
    "stop_sequences", "stream",        "temperature", "top_p",
    "top_k",          "metadata",      "tools",       "tool_choice",
    "thinking",       "service_tier",  "betas",       "context_management",
    "mcp_servers",    "output_config", "container"};
const std::initializer_list<std::string_view> kCountFields = {
    "model", "messages",           "system",      "tools",        "tool_choice", "thinking",
    "betas", "context_management", "mcp_servers", "output_config"};

// Claude Code's first system block: "x-anthropic-billing-header: cc_version=...;
// cc_entrypoint=...;", which changes between releases and sessions. It is
// metadata for Anthropic's billing, not an instruction, and at the very start
// of the prompt it would defeat the prompt cache: it is left out.
constexpr std::string_view kBillingHeader = "x-anthropic-billing-header:";

// What reading the messages learns besides the turns: the tools that a
// tool_reference block loaded (a deferred tool is shown once referenced).
struct MessagesReading {
  std::vector<ChatMessage> turns;
  std::vector<std::string> referenced_tools;
};

const json *typed_field(const json &object, const char *name, bool (json::*is)() const,
                        const char *what, const std::string &where) {
  const json *value = field(object, name);
  if (value != nullptr && !((*value).*is)())
    throw bad_request(fmt::format("'{}.{}' must be {}", where, name, what), where + "." + name);
  return value;
}

std::string required_string(const json &object, const char *name, const std::string &where) {
  const json *value = typed_field(object, name, &json::is_string, "a string", where);
  if (value == nullptr)
    throw bad_request(fmt::format("'{}.{}' is required", where, name), where + "." + name);
  return value->get<std::string>();
}

std::string block_type(const json &block, const std::string &where) {
  if (!block.is_object())
    throw bad_request(fmt::format("'{}' must be a content block object", where), where);
  return required_string(block, "type", where);
}

// A text block's text ({"type": "text", "text", "cache_control"?,
// "citations"?}: prompt caching is automatic here, citations unused).
std::string text_of(const json &block, const std::string &where) {
  ignore_unknown_fields(block, {"type", "text", "cache_control", "citations"}, where);
  return required_string(block, "text", where);
}

// A block that is not text where text is read: an image or a document
// becomes a note that it was left out; another type is ignored.
std::string other_block(const std::string &type, const std::string &where) {
  if (const std::string_view what = media_kind(type); !what.empty())
    return left_out_note(what, where);
  note_ignored_field(where + " (type " + type.substr(0, 32) + ")");
  return {};
}

// "system": a string or a list of text blocks (the billing header left out).
std::string system_text(const json &body) {
  const json *system = field(body, "system");
  if (system == nullptr)
    return {};
  if (system->is_string())
    return system->get<std::string>();
  if (!system->is_array())
    throw bad_request("'system' must be a string or a list of text blocks", "system");
  std::string text;
  for (size_t i = 0; i < system->size(); ++i) {
    const std::string where = fmt::format("system[{}]", i);
    const std::string type = block_type((*system)[i], where);
    const std::string piece =
        type == "text" ? text_of((*system)[i], where) : other_block(type, where);
    if (piece.empty() || (type == "text" && piece.starts_with(kBillingHeader)))
      continue;
    if (!text.empty())
      text += "\n\n";
    text += piece;
  }
  return text;
}

// A tool_result's content: a string or blocks (text; an image or document
// becomes a note; a tool_reference loads the tool it names).
std::string tool_result_text(const json &block, const std::string &where,
                             MessagesReading &reading) {
  ignore_unknown_fields(block, {"type", "tool_use_id", "content", "is_error", "cache_control"},
                        where);
  required_string(block, "tool_use_id", where);
  const json *error = typed_field(block, "is_error", &json::is_boolean, "a boolean", where);
  std::string text;
  if (const json *content = field(block, "content"); content == nullptr) {
  } else if (content->is_string()) {
    text = content->get<std::string>();
  } else if (content->is_array()) {
    for (size_t i = 0; i < content->size(); ++i) {
      const std::string at = fmt::format("{}.content[{}]", where, i);
      const std::string type = block_type((*content)[i], at);
      if (type == "text") {
        text += text_of((*content)[i], at);
      } else if (type == "tool_reference") {
        ignore_unknown_fields((*content)[i], {"type", "tool_name", "cache_control"}, at);
        const std::string name = required_string((*content)[i], "tool_name", at);
        reading.referenced_tools.push_back(name);
        text += (text.empty() ? "" : "\n") + ("Tool loaded: " + name);
      } else {
        text += other_block(type, at);
      }
    }
  } else {
    throw bad_request(fmt::format("'{}.content' must be a string or a list of blocks", where),
                      where + ".content");
  }
  // The model learns that the call failed, as Anthropic's is_error says.
  return error != nullptr && error->get<bool>() ? "Error: " + text : text;
}

ToolCall tool_use_call(const json &block, const std::string &where) {
  ignore_unknown_fields(block, {"type", "id", "name", "input", "cache_control", "caller"}, where);
  required_string(block, "id", where);
  const json *name = field(block, "name");
  if (name == nullptr)
    throw bad_request(fmt::format("'{}.name' is required", where), where + ".name");
  check_function_name(*name, where + ".name");
  const json *input = typed_field(block, "input", &json::is_object, "an object", where);
  return {name->get<std::string>(), call_arguments_text(input ? *input : json::object())};
}

// One message of "messages" as the chat turns it stands for: a user
// message's tool_result blocks become tool turns (in order, before its
// text), an assistant message's thinking goes back in its think block, a
// system message (Claude Code sends its environment as one, anywhere in the
// list) is a system turn where it stands.
void add_message(const json &message, size_t index, MessagesReading &reading) {
  std::vector<ChatMessage> &out = reading.turns;
  const std::string where = fmt::format("messages[{}]", index);
  if (!message.is_object())
    throw bad_request(fmt::format("'{}' must be an object", where), where);
  ignore_unknown_fields(message, {"role", "content", "output_config"}, where);
  const std::string role = required_string(message, "role", where);
  if (role != "user" && role != "assistant" && role != "system")
    throw bad_request(fmt::format("'{}.role' must be \"user\", \"assistant\" or \"system\", "
                                  "not \"{}\"",
                                  where, role.substr(0, 32)),
                      where + ".role");
  const json *content = field(message, "content");
  if (content == nullptr)
    throw bad_request(fmt::format("'{}.content' is required", where), where + ".content");
  if (content->is_string()) {
    out.push_back({role, content->get<std::string>()});
    return;
  }
  if (!content->is_array())
    throw bad_request(
        fmt::format("'{}.content' must be a string or a list of content blocks", where),
        where + ".content");
  ChatMessage turn{role, {}};
  std::string thinking;
  const auto add_text = [&](const std::string &text) {
    if (!text.empty()) // separate blocks stay separate paragraphs
      turn.content += (turn.content.empty() ? "" : "\n\n") + text;
  };
  for (size_t i = 0; i < content->size(); ++i) {
    const json &block = (*content)[i];
    const std::string at = fmt::format("{}.content[{}]", where, i);
    const std::string type = block_type(block, at);
    if (type == "text") {
      add_text(text_of(block, at));
    } else if (type == "tool_result" && role == "user") {
      if (!turn.content.empty()) { // text before a result keeps its place
        out.push_back(std::move(turn));
        turn = {role, {}};
      }
      out.push_back({"tool", tool_result_text(block, at, reading)});
    } else if (type == "tool_use" && role == "assistant") {
      turn.tool_calls.push_back(tool_use_call(block, at));
    } else if (type == "thinking" && role == "assistant") {
      ignore_unknown_fields(block, {"type", "thinking", "signature"}, at);
      thinking += required_string(block, "thinking", at);
    } else if (type == "redacted_thinking" && role == "assistant") {
      // Another model's encrypted reasoning: nothing this one can read.
    } else if (type == "tool_result" || type == "tool_use" || type == "thinking") {
      throw bad_request(fmt::format("'{}' is a '{}' block, which belongs to {} messages", at, type,
                                    type == "tool_result" ? "user" : "assistant"),
                        at);
    } else {
      add_text(other_block(type, at));
    }
  }
  if (!thinking.empty())
    turn.content = "<think>\n" + thinking + "\n</think>\n\n" + turn.content;
  if (!turn.content.empty() || !turn.tool_calls.empty() || content->empty())
    out.push_back(std::move(turn));
}

MessagesReading chat_turns(const json &body) {
  const json &messages = nonempty_list(body, "messages");
  MessagesReading reading;
  const std::string system = system_text(body);
  if (!system.empty())
    reading.turns.push_back({"system", system});
  for (size_t i = 0; i < messages.size(); ++i)
    add_message(messages[i], i, reading);
  // The conversation ends with the user's turn (system turns may follow it).
  std::string last_role;
  for (const json &message : messages)
    if (message.is_object() && message.value("role", "") != "system")
      last_role = message.value("role", "");
  if (last_role != "user")
    throw bad_request("The last message must be a user message: bonsai does not continue an "
                      "assistant message given as a prefill",
                      "messages");
  return reading;
}

// "tool_choice": {"type": "auto" | "any" | "tool" | "none", "name"?,
// "disable_parallel_tool_use"?}.
struct ToolChoice {
  std::string type = "auto";
  std::string name;
  bool parallel = true;
};

ToolChoice tool_choice(const json &body) {
  ToolChoice choice;
  const json *value = field(body, "tool_choice");
  if (value == nullptr)
    return choice;
  if (!value->is_object())
    throw bad_request("'tool_choice' must be an object such as {\"type\": \"auto\"}",
                      "tool_choice");
  ignore_unknown_fields(*value, {"type", "name", "disable_parallel_tool_use"}, "tool_choice");
  choice.type = required_string(*value, "type", "tool_choice");
  if (choice.type != "auto" && choice.type != "any" && choice.type != "tool" &&
      choice.type != "none")
    throw bad_request("'tool_choice.type' must be \"auto\", \"any\", \"tool\" or \"none\"",
                      "tool_choice.type");
  if (choice.type == "tool")
    choice.name = required_string(*value, "name", "tool_choice");
  else if (field(*value, "name") != nullptr)
    throw bad_request("'tool_choice.name' belongs to {\"type\": \"tool\"}", "tool_choice.name");
  choice.parallel = !bool_field(*value, "disable_parallel_tool_use", false);
  return choice;
}

// One of "tools": a custom tool {"name", "description"?, "input_schema",
// "type"?: "custom", "cache_control"?, "defer_loading"?}. Anthropic's own
// tool types (web_search, code_execution, bash, text_editor, ...) run on
// Anthropic's side or need its schemas: left out with a warning.
void custom_tool(const json &tool, const std::string &where, const std::string &pointer,
                 std::vector<FunctionTool> &out) {
  if (const json *type = field(tool, "type"); type != nullptr && *type != "custom") {
    note_warning(
        fmt::format("{}: Anthropic's '{}' tool was left out (bonsai serves custom tools)", where,
                    type->is_string() ? type->get<std::string>().substr(0, 32) : std::string("?")));
    return;
  }
  ignore_unknown_fields(tool,
                        {"type", "name", "description", "input_schema", "cache_control",
                         "defer_loading", "strict", "input_examples", "eager_input_streaming"},
                        where);
  bool_field(tool, "defer_loading", false);
  FunctionTool function = function_tool(tool, where, "input_schema", true);
  function.pointer = pointer;
  out.push_back(std::move(function));
}

// The tools the model is shown: all but the deferred ones (defer_loading:
// true), which stay hidden until a tool_reference block has loaded them, as
// Anthropic's tool search does.
std::vector<FunctionTool> shown_tools(const json &body,
                                      const std::vector<std::string> &referenced) {
  std::vector<FunctionTool> shown;
  for (FunctionTool &tool : function_tools(body, custom_tool)) {
    const json &object = body.at(json::json_pointer(tool.pointer));
    const bool deferred = object.value("defer_loading", false);
    if (!deferred || std::find(referenced.begin(), referenced.end(), tool.name) != referenced.end())
      shown.push_back(std::move(tool));
  }
  return shown;
}

// The tools, told to the model and, for "any" and "tool", enforced.
void apply_tools(const json &body, std::string_view text, const RequestContext &context,
                 const std::vector<std::string> &referenced, CompletionSpec &spec) {
  const std::vector<FunctionTool> tools = shown_tools(body, referenced);
  const ToolChoice choice = tool_choice(body);
  if (choice.type != "auto" && choice.type != "none" && tools.empty())
    throw bad_request(fmt::format("'tool_choice' \"{}\" needs 'tools'", choice.type),
                      "tool_choice");
  if (choice.type == "none" || tools.empty())
    return;
  for (const FunctionTool &tool : tools)
    spec.generate.tools.push_back(rendered_tool(tool));
  spec.parse_tool_calls = true;
  spec.parallel_tool_calls = choice.parallel;
  if (choice.type == "auto")
    return;
  ReplyFormat &format = spec.generate.format;
  format.kind = ReplyFormat::Kind::tool_calls;
  format.parallel_tool_calls = choice.parallel;
  // The schemas in the client's key order, which the reply follows.
  const ojson ordered = parse_ordered_json_within(text, context.json);
  for (const FunctionTool &tool : tools)
    if (choice.type == "any" || tool.name == choice.name)
      format.tools.push_back(format_tool(tool.name, ordered_schema(ordered, tool, "input_schema")));
  if (format.tools.empty())
    throw bad_request(fmt::format("'tool_choice' names the tool '{}', which is not in 'tools'",
                                  choice.name.substr(0, 64)),
                      "tool_choice.name");
  spec.format_param = "tools";
}

// How much the model may think (docs/server.md, "Anthropic Messages API"):
// "thinking" turns the think block on ({"type": "enabled",
// "budget_tokens"}, {"type": "adaptive"}) or off ({"type": "disabled"},
// absent); "output_config": {"effort"} sets its budget when no
// budget_tokens does: low 1,024 tokens, medium 4,096, high 16,384, max none.
// "display": "omitted" keeps the thinking but leaves it out of the reply.
struct Thinking {
  bool on = false;
  bool shown = false;
  int32_t budget = -1;
};

int32_t effort_budget(const json &config, const std::string &where) {
  if (!config.is_object())
    throw bad_request(fmt::format("'{}' must be an object", where), where);
  ignore_unknown_fields(config, {"effort", "format", "task_budget"}, where);
  const std::string effort = string_field(config, "effort");
  if (effort.empty())
    return -1;
  if (effort == "low")
    return 1024;
  if (effort == "medium")
    return 4096;
  if (effort == "high")
    return 16384;
  if (effort == "max" || effort == "xhigh")
    return -1;
  throw bad_request(fmt::format("'{}.effort' must be \"low\", \"medium\", \"high\", \"xhigh\" or "
                                "\"max\"",
                                where),
                    where + ".effort");
}

Thinking thinking_of(const json &body) {
  Thinking out;
  // The effort: the body's output_config, else the last message's (Claude
  // Code's per-turn setting).
  if (const json *config = field(body, "output_config"); config != nullptr) {
    out.budget = effort_budget(*config, "output_config");
  } else if (const json *messages = field(body, "messages"); messages != nullptr) {
    for (size_t i = messages->size(); i-- > 0;)
      if (const json *own =
              (*messages)[i].is_object() ? field((*messages)[i], "output_config") : nullptr;
          own != nullptr) {
        out.budget = effort_budget(*own, fmt::format("messages[{}].output_config", i));
        break;
      }
  }
  const json *thinking = field(body, "thinking");
  if (thinking == nullptr)
    return out;
  if (!thinking->is_object())
    throw bad_request("'thinking' must be an object such as {\"type\": \"enabled\", "
                      "\"budget_tokens\": 1024}",
                      "thinking");
  ignore_unknown_fields(*thinking, {"type", "budget_tokens", "display"}, "thinking");
  const std::string type = required_string(*thinking, "type", "thinking");
  if (type == "disabled")
    return out;
  if (type != "enabled" && type != "adaptive")
    throw bad_request("'thinking.type' must be \"enabled\", \"adaptive\" or \"disabled\"",
                      "thinking.type");
  const std::string display = string_field(*thinking, "display");
  if (!display.empty() && display != "summarized" && display != "omitted" && display != "full")
    throw bad_request("'thinking.display' must be \"summarized\", \"full\" or \"omitted\"",
                      "thinking.display");
  out.on = true;
  out.shown = display != "omitted";
  if (type == "enabled") {
    if (field(*thinking, "budget_tokens") == nullptr)
      throw bad_request("'thinking.budget_tokens' is required with \"enabled\"",
                        "thinking.budget_tokens");
    out.budget =
        static_cast<int32_t>(integer_field(*thinking, "budget_tokens", 0, 1'000'000'000, -1));
  }
  return out;
}

// Fields that change nothing here, checked for their type.
void check_inert_fields(const json &body) {
  if (const json *metadata = field(body, "metadata"); metadata != nullptr) {
    if (!metadata->is_object())
      throw bad_request("'metadata' must be an object", "metadata");
    ignore_unknown_fields(*metadata, {"user_id"}, "metadata");
    string_field(*metadata, "user_id");
  }
  string_field(body, "service_tier");
  if (const json *betas = field(body, "betas"); betas != nullptr && !betas->is_array())
    throw bad_request("'betas' must be a list", "betas");
  if (const json *management = field(body, "context_management");
      management != nullptr && !management->is_object())
    throw bad_request("'context_management' must be an object", "context_management");
  if (const json *servers = field(body, "mcp_servers");
      servers != nullptr && !(servers->is_array() && servers->empty()))
    throw bad_request("'mcp_servers' is not supported: bonsai serve connects to no MCP server",
                      "mcp_servers");
}

} // namespace

MessagesRequest read_messages_request(std::string_view text, const RequestContext &context,
                                      MessagesEndpoint endpoint) {
  const json body = object_body(text, context.json);
  const bool create = endpoint == MessagesEndpoint::create;
  ignore_unknown_fields(body, create ? kCreateFields : kCountFields, "");
  check_inert_fields(body);
  MessagesRequest out{chat_spec(body, context.model_id, "messages", context), false};
  CompletionSpec &spec = out.spec;
  GenerateRequest &g = spec.generate;
  MessagesReading reading = chat_turns(body);
  g.messages = std::move(reading.turns);
  const Thinking thinking = thinking_of(body);
  out.show_thinking = thinking.on && thinking.shown;
  g.enable_thinking = thinking.on;
  if (thinking.on && thinking.budget >= 0)
    g.reasoning_budget = thinking.budget;
  apply_tools(body, text, context, reading.referenced_tools, spec);
  if (create) {
    if (field(body, "max_tokens") == nullptr)
      throw bad_request("'max_tokens' is required", "max_tokens");
    // A max_tokens past the context (Claude Code asks for 128,000) is not an
    // error: the reply ends at the context's end with "max_tokens".
    g.n_predict = static_cast<int32_t>(integer_field(body, "max_tokens", 1, 1'000'000'000, 1));
    spec.stream = bool_field(body, "stream", false);
    SamplingParams &s = g.sampling;
    s.temperature = static_cast<float>(number_field(body, "temperature", 0.0, 1.0, s.temperature));
    s.top_p = static_cast<float>(number_field(body, "top_p", 0.0, 1.0, s.top_p));
    s.top_k = static_cast<int32_t>(integer_field(body, "top_k", 0, 1'000'000, s.top_k));
    g.stop_strings = stop_list(field(body, "stop_sequences"), "stop_sequences", context);
    if (!g.stop_strings.empty() && g.format.kind != ReplyFormat::Kind::text)
      throw bad_request("'stop_sequences' cannot be used with a required tool call: a stop "
                        "sequence could cut the call before it is complete",
                        "stop_sequences");
  }
  check_prompt_bytes(g, context, spec.prompt_param);
  return out;
}

} // namespace bonsai::server

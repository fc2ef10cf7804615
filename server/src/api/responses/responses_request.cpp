#include "api/responses/responses_request.hpp"

#include <fmt/format.h>

#include "base/api_error.hpp"
#include "request/chat_request_parts.hpp"
#include "request/json_limits.hpp"
#include "request/request_fields.hpp"
#include "request/tool_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The fields bonsai knows. include, prompt_cache_key, safety_identifier,
// service_tier, client_metadata (Codex's) and stream_options change nothing
// here and are checked for their type; any other field is ignored and named
// in the answer's Bonsai-Ignored-Fields header (field_notes.hpp).
const std::initializer_list<std::string_view> kFields = {"model",
                                                         "input",
                                                         "instructions",
                                                         "max_output_tokens",
                                                         "temperature",
                                                         "top_p",
                                                         "top_logprobs",
                                                         "tools",
                                                         "tool_choice",
                                                         "parallel_tool_calls",
                                                         "max_tool_calls",
                                                         "text",
                                                         "reasoning",
                                                         "stream",
                                                         "stream_options",
                                                         "store",
                                                         "previous_response_id",
                                                         "conversation",
                                                         "background",
                                                         "metadata",
                                                         "client_metadata",
                                                         "user",
                                                         "truncation",
                                                         "include",
                                                         "service_tier",
                                                         "prompt_cache_key",
                                                         "prompt_cache_retention",
                                                         "safety_identifier"};

// Hosted tools run on OpenAI's side: left out of the prompt with a warning.
// (Any other type that is not a function or a namespace is left out too.)
bool is_hosted_tool(std::string_view type) {
  for (const std::string_view hosted :
       {"web_search", "web_search_preview", "file_search", "code_interpreter", "computer_use",
        "computer_use_preview", "image_generation", "tool_search", "mcp", "local_shell"})
    if (type == hosted || type.starts_with(std::string(hosted) + "_"))
      return true;
  return false;
}

std::string text_value(const json &object, const char *name, const std::string &where) {
  const json *value = field(object, name);
  if (value == nullptr || !value->is_string())
    throw bad_request(fmt::format("'{}.{}' must be a string", where, name), where + "." + name);
  return value->get<std::string>();
}

// A message's content: a string or a list of input_text / output_text
// parts (what the SDKs send back of an earlier reply, refusals included).
// An image, file or audio part becomes a note that it was left out; a part
// of another type is ignored.
std::string message_text(const json &content, const std::string &where) {
  if (content.is_string())
    return content.get<std::string>();
  if (!content.is_array())
    throw bad_request(fmt::format("'{}' must be a string or a list of parts", where), where);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json &part = content[i];
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!part.is_object() || field(part, "type") == nullptr || !part["type"].is_string())
      throw bad_request(fmt::format("'{}' must be a part such as {{\"type\": \"input_text\", "
                                    "\"text\": ...}}",
                                    at),
                        at);
    const std::string type = part["type"].get<std::string>();
    if (type == "input_text" || type == "output_text" || type == "text") {
      ignore_unknown_fields(part, {"type", "text", "annotations", "logprobs"}, at);
      text += text_value(part, "text", at);
    } else if (type == "refusal") {
      ignore_unknown_fields(part, {"type", "refusal"}, at);
      text += text_value(part, "refusal", at);
    } else if (const std::string_view what = media_kind(type); !what.empty()) {
      text += left_out_note(what, at);
    } else {
      note_ignored_field(at + " (type " + type.substr(0, 32) + ")");
    }
  }
  return text;
}

// Builds the chat turns from the input items, in order.
class Conversation {
public:
  void message(const json &item, const std::string &where) {
    ignore_unknown_fields(item, {"type", "role", "content", "id", "status"}, where);
    std::string role = text_value(item, "role", where);
    if (role == "developer")
      role = "system";
    if (role != "system" && role != "user" && role != "assistant")
      throw bad_request(
          fmt::format("'{}.role' must be user, assistant, system or developer", where),
          where + ".role");
    const json *content = field(item, "content");
    if (content == nullptr)
      throw bad_request(fmt::format("'{}.content' is required", where), where + ".content");
    std::string text = message_text(*content, where + ".content");
    if (role == "assistant") {
      assistant().content += text;
      return;
    }
    turns_.push_back({role, std::move(text)});
  }

  void function_call(const json &item, const std::string &where) {
    ignore_unknown_fields(
        item, {"type", "call_id", "name", "namespace", "arguments", "id", "status"}, where);
    text_value(item, "call_id", where);
    const json *name = field(item, "name");
    if (name == nullptr)
      throw bad_request(fmt::format("'{}.name' is required", where), where + ".name");
    check_function_name(*name, where + ".name");
    // A call of a namespace's function goes back under the name the model
    // was shown (flat_tool_name).
    std::string shown = name->get<std::string>();
    if (const json *space = field(item, "namespace"); space != nullptr) {
      check_function_name(*space, where + ".namespace");
      shown = flat_tool_name(space->get<std::string>(), shown);
    }
    assistant().tool_calls.push_back({std::move(shown), text_value(item, "arguments", where)});
  }

  void function_call_output(const json &item, const std::string &where) {
    ignore_unknown_fields(item, {"type", "call_id", "output", "id", "status"}, where);
    text_value(item, "call_id", where);
    const json *output = field(item, "output");
    if (output == nullptr)
      throw bad_request(fmt::format("'{}.output' is required", where), where + ".output");
    turns_.push_back({"tool", message_text(*output, where + ".output")});
  }

  // An earlier reply's reasoning goes back into the think block of the
  // assistant turn it came with, as Qwen3's template expects: its text, else
  // its summary.
  void reasoning(const json &item, const std::string &where) {
    ignore_unknown_fields(item, {"type", "id", "summary", "content", "encrypted_content", "status"},
                          where);
    std::string text = part_texts(item, "content", where);
    if (text.empty())
      text = part_texts(item, "summary", where);
    pending_reasoning_ += text;
  }

  std::vector<ChatMessage> take() {
    for (auto &[index, reasoning] : reasoning_of_)
      turns_[index].content = "<think>\n" + reasoning + "\n</think>\n\n" + turns_[index].content;
    return std::move(turns_);
  }

private:
  // The texts of the {"type", "text"} parts in item[name] (a list).
  static std::string part_texts(const json &item, const char *name, const std::string &where) {
    const json *parts = field(item, name);
    if (parts == nullptr)
      return {};
    const std::string list = where + "." + name;
    if (!parts->is_array())
      throw bad_request(fmt::format("'{}' must be a list", list), list);
    std::string text;
    for (size_t i = 0; i < parts->size(); ++i) {
      const std::string at = fmt::format("{}[{}]", list, i);
      if (!(*parts)[i].is_object())
        throw bad_request(fmt::format("'{}' must be a text part", at), at);
      ignore_unknown_fields((*parts)[i], {"type", "text"}, at);
      text += text_value((*parts)[i], "text", at);
    }
    return text;
  }

  // The assistant turn an assistant item belongs to: the last turn when it
  // is the assistant's and no reasoning item came between, else a new one.
  ChatMessage &assistant() {
    const bool continues =
        !turns_.empty() && turns_.back().role == "assistant" && pending_reasoning_.empty();
    if (!continues)
      turns_.push_back({"assistant", {}});
    if (!pending_reasoning_.empty()) {
      reasoning_of_.emplace_back(turns_.size() - 1, std::move(pending_reasoning_));
      pending_reasoning_.clear();
    }
    return turns_.back();
  }

  std::vector<ChatMessage> turns_;
  std::string pending_reasoning_; // waits for the assistant turn it belongs to
  std::vector<std::pair<size_t, std::string>> reasoning_of_; // turn index, its reasoning
};

std::vector<ChatMessage> input_turns(const json &body) {
  Conversation conversation;
  if (const json *instructions = field(body, "instructions"); instructions != nullptr) {
    if (!instructions->is_string())
      throw bad_request("'instructions' must be a string", "instructions");
    conversation.message({{"role", "system"}, {"content", *instructions}}, "instructions");
  }
  const json *input = field(body, "input");
  if (input == nullptr)
    throw bad_request("'input' is required", "input");
  if (input->is_string()) {
    conversation.message({{"role", "user"}, {"content", *input}}, "input");
    return conversation.take();
  }
  if (!input->is_array() || input->empty())
    throw bad_request("'input' must be a string or a non-empty list of items", "input");
  for (size_t i = 0; i < input->size(); ++i) {
    const json &item = (*input)[i];
    const std::string where = fmt::format("input[{}]", i);
    if (!item.is_object())
      throw bad_request(fmt::format("'{}' must be an object", where), where);
    const json *type = field(item, "type");
    const std::string kind = type == nullptr ? "message" : type->is_string() ? *type : "";
    if (kind == "message")
      conversation.message(item, where);
    else if (kind == "function_call")
      conversation.function_call(item, where);
    else if (kind == "function_call_output")
      conversation.function_call_output(item, where);
    else if (kind == "reasoning")
      conversation.reasoning(item, where);
    else if (kind == "item_reference")
      throw bad_request(fmt::format("'{}' refers to a stored item; bonsai serve stores none: send "
                                    "the item itself",
                                    where),
                        where);
    else if (kind.empty())
      throw bad_request(fmt::format("'{}.type' must be a string such as \"message\"", where),
                        where + ".type");
    else // a hosted tool's call, a custom tool's, a compaction: nothing the model can read
      note_ignored_field(where + " (type " + kind.substr(0, 32) + ")");
  }
  return conversation.take();
}

// Stateless: what would need a stored response is refused, saying so.
void refuse_state(const json &body) {
  if (bool_field(body, "store", false))
    throw bad_request("'store' must be false: bonsai serve keeps no responses (send the whole "
                      "conversation in 'input')",
                      "store");
  if (field(body, "previous_response_id") != nullptr)
    throw bad_request("'previous_response_id' is not supported: bonsai serve keeps no responses "
                      "(send the whole conversation in 'input')",
                      "previous_response_id");
  if (field(body, "conversation") != nullptr)
    throw bad_request("'conversation' is not supported: bonsai serve keeps no conversations "
                      "(send the whole conversation in 'input')",
                      "conversation");
  if (bool_field(body, "background", false))
    throw bad_request("'background' must be false: bonsai serve keeps no responses to poll",
                      "background");
}

void check_inert_fields(const json &body) {
  for (const char *name : {"user", "prompt_cache_key", "safety_identifier", "service_tier"})
    string_field(body, name);
  if (const json *include = field(body, "include"); include != nullptr && !include->is_array())
    throw bad_request("'include' must be a list", "include");
  if (const json *options = field(body, "stream_options"); options != nullptr) {
    if (!options->is_object())
      throw bad_request("'stream_options' must be an object", "stream_options");
    ignore_unknown_fields(*options, {"include_obfuscation"}, "stream_options");
  }
  if (const json *metadata = field(body, "metadata"); metadata != nullptr) {
    if (!metadata->is_object())
      throw bad_request("'metadata' must be an object of strings", "metadata");
    for (const auto &[key, value] : metadata->items())
      if (!value.is_string())
        throw bad_request("'metadata' must be an object of strings", "metadata");
  }
  const std::string truncation = string_field(body, "truncation");
  if (!truncation.empty() && truncation != "auto" && truncation != "disabled")
    throw bad_request("'truncation' must be \"auto\" or \"disabled\"", "truncation");
}

// A function tool {"type": "function", "name", "description"?,
// "parameters"?, "strict"?} at `pointer`.
FunctionTool read_function(const json &tool, const std::string &where, const std::string &pointer) {
  ignore_unknown_fields(
      tool, {"type", "name", "description", "parameters", "strict", "defer_loading"}, where);
  bool_field(tool, "strict", false);
  FunctionTool out = function_tool(tool, where, "parameters", false);
  out.pointer = pointer;
  return out;
}

// One of "tools": a function tool; a namespace (Codex's groups, {"type":
// "namespace", "name", "description"?, "tools": [function tools]}) gives its
// functions under flat names; a hosted tool is left out with a warning.
void read_tool(const json &tool, const std::string &where, const std::string &pointer,
               std::vector<FunctionTool> &out) {
  const json *type = field(tool, "type");
  if (type == nullptr || !type->is_string())
    throw bad_request(fmt::format("'{}.type' must be a string such as \"function\"", where),
                      where + ".type");
  const std::string &kind = type->get_ref<const std::string &>();
  if (kind == "function") {
    out.push_back(read_function(tool, where, pointer));
    return;
  }
  if (kind != "namespace") {
    note_warning(fmt::format("{}: the {} tool '{}' was left out (bonsai serves function tools)",
                             where, is_hosted_tool(kind) ? "hosted" : "unsupported",
                             kind.substr(0, 32)));
    return;
  }
  ignore_unknown_fields(tool, {"type", "name", "description", "tools"}, where);
  const json *name = field(tool, "name");
  if (name == nullptr)
    throw bad_request(fmt::format("'{}.name' is required", where), where + ".name");
  check_function_name(*name, where + ".name");
  const json *members = field(tool, "tools");
  if (members == nullptr || !members->is_array())
    throw bad_request(fmt::format("'{}.tools' must be a list of function tools", where),
                      where + ".tools");
  for (size_t k = 0; k < members->size(); ++k) {
    const std::string at = fmt::format("{}.tools[{}]", where, k);
    const json &member = (*members)[k];
    if (!member.is_object())
      throw bad_request(fmt::format("'{}' must be an object", at), at);
    const json *member_type = field(member, "type");
    if (member_type != nullptr && *member_type != "function") {
      note_warning(fmt::format("{}: a '{}' tool in a namespace was left out", at,
                               member_type->is_string()
                                   ? member_type->get_ref<const std::string &>().substr(0, 32)
                                   : "?"));
      continue;
    }
    FunctionTool function = read_function(member, at, fmt::format("{}/tools/{}", pointer, k));
    function.name = flat_tool_name(name->get<std::string>(), function.name);
    out.push_back(std::move(function));
  }
}

struct ToolChoice {
  std::string mode = "auto"; // auto, none, required, named
  std::string name;          // named: the function, flat (flat_tool_name)
};

// "tool_choice": "auto", "none", "required", {"type": "function", "name",
// "namespace"?}, or {"type": "allowed_tools", "mode"} (the mode is kept; the
// list is not enforced). A hosted tool's choice is ignored with a warning.
ToolChoice tool_choice(const json &body) {
  const json *value = field(body, "tool_choice");
  if (value == nullptr)
    return {};
  if (value->is_string() && (*value == "auto" || *value == "none" || *value == "required"))
    return {value->get<std::string>(), ""};
  const json *type = value->is_object() ? field(*value, "type") : nullptr;
  if (type == nullptr || !type->is_string())
    throw bad_request("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                      "{\"type\": \"function\", \"name\": ...}",
                      "tool_choice");
  if (*type == "allowed_tools") {
    ignore_unknown_fields(*value, {"type", "mode", "tools"}, "tool_choice");
    const std::string mode = string_field(*value, "mode");
    if (!mode.empty() && mode != "auto" && mode != "required")
      throw bad_request("'tool_choice.mode' must be \"auto\" or \"required\"", "tool_choice.mode");
    note_warning("tool_choice: allowed_tools is read as its mode; every tool stays callable");
    return {mode.empty() ? "auto" : mode, ""};
  }
  if (*type != "function") {
    note_warning(fmt::format("tool_choice: the '{}' tool is not served; the model chooses",
                             type->get_ref<const std::string &>().substr(0, 32)));
    return {};
  }
  ignore_unknown_fields(*value, {"type", "name", "namespace"}, "tool_choice");
  const json *name = field(*value, "name");
  if (name == nullptr || !name->is_string())
    throw bad_request("'tool_choice.name' must be a string", "tool_choice.name");
  const json *space = field(*value, "namespace");
  if (space != nullptr && !space->is_string())
    throw bad_request("'tool_choice.namespace' must be a string", "tool_choice.namespace");
  return {"named", space != nullptr
                       ? flat_tool_name(space->get<std::string>(), name->get<std::string>())
                       : name->get<std::string>()};
}

// "text": {"format": {"type": "text" | "json_object" | "json_schema", ...},
// "verbosity"?}.
const json *text_format(const json &body) {
  const json *text = field(body, "text");
  if (text == nullptr)
    return nullptr;
  if (!text->is_object())
    throw bad_request("'text' must be an object", "text");
  ignore_unknown_fields(*text, {"format", "verbosity"}, "text");
  string_field(*text, "verbosity");
  const json *format = field(*text, "format");
  if (format == nullptr)
    return nullptr;
  const json *type = format->is_object() ? field(*format, "type") : nullptr;
  if (type == nullptr || !(*type == "text" || *type == "json_object" || *type == "json_schema"))
    throw bad_request("'text.format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                      "text.format.type");
  if (*type == "json_schema") {
    ignore_unknown_fields(*format, {"type", "name", "schema", "strict", "description"},
                          "text.format");
    const json *schema = field(*format, "schema");
    if (schema == nullptr || !(schema->is_object() || schema->is_boolean()))
      throw bad_request("'text.format.schema' must be a JSON Schema object", "text.format.schema");
    string_field(*format, "name");
    string_field(*format, "description");
    bool_field(*format, "strict", false);
  } else {
    ignore_unknown_fields(*format, {"type"}, "text.format");
  }
  return *type == "text" ? nullptr : format;
}

// Tools and the text format: what the model is told, what constrained
// decoding enforces. With both, the reply is either calls or one JSON value
// of the format (one grammar with both branches), as an agent with tools and
// an output type needs: it calls tools until it answers in the format.
void apply_formats(const json &body, std::string_view text, const RequestContext &context,
                   CompletionSpec &spec) {
  const std::vector<FunctionTool> tools = function_tools(body, read_tool);
  const ToolChoice choice = tool_choice(body);
  const json *format = text_format(body);
  spec.parallel_tool_calls = bool_field(body, "parallel_tool_calls", true);
  if (choice.mode != "auto" && choice.mode != "none" && tools.empty())
    throw bad_request(fmt::format("'tool_choice' \"{}\" needs 'tools'",
                                  choice.mode == "named" ? choice.name.substr(0, 64) : choice.mode),
                      "tool_choice");
  const bool use_tools = choice.mode != "none" && !tools.empty();
  if (use_tools) {
    for (const FunctionTool &tool : tools)
      spec.generate.tools.push_back(rendered_tool(tool));
    spec.parse_tool_calls = true;
  }
  const bool forced = choice.mode == "required" || choice.mode == "named";
  if (format == nullptr && !forced)
    return;
  const ojson ordered = parse_ordered_json_within(text, context.json);
  ReplyFormat &reply = spec.generate.format;
  reply.parallel_tool_calls = spec.parallel_tool_calls;
  if (use_tools)
    for (const FunctionTool &tool : tools)
      if (choice.mode != "named" || tool.name == choice.name)
        reply.tools.push_back(format_tool(tool.name, ordered_schema(ordered, tool, "parameters")));
  if (forced) {
    if (reply.tools.empty())
      throw bad_request(fmt::format("'tool_choice' names the function '{}', which is not in "
                                    "'tools'",
                                    choice.name.substr(0, 64)),
                        "tool_choice");
    reply.kind = ReplyFormat::Kind::tool_calls;
    spec.format_param = "tools";
    return;
  }
  const ojson &spec_format = ordered.at("text").at("format");
  const bool object = spec_format.at("type") == "json_object";
  if (!object)
    reply.schema = spec_format.at("schema").dump();
  spec.format_param = object ? "text.format" : "text.format.schema";
  if (use_tools)
    reply.kind = ReplyFormat::Kind::tool_calls_or_json;
  else
    reply.kind = object ? ReplyFormat::Kind::json_object : ReplyFormat::Kind::json_schema;
}

// "reasoning": {"effort", "summary", "generate_summary"}: thinking is on
// unless the effort is "none" or "minimal"; a summary ("auto", "concise",
// "detailed") asks for the reasoning as summary parts, which is how Codex
// shows it (the think block is given whole: there is no shorter summary).
struct Reasoning {
  bool thinking = true;
  bool summary = false;
};

Reasoning reasoning_of(const json &body) {
  const json *reasoning = field(body, "reasoning");
  if (reasoning == nullptr)
    return {};
  if (!reasoning->is_object())
    throw bad_request("'reasoning' must be an object", "reasoning");
  ignore_unknown_fields(*reasoning, {"effort", "summary", "generate_summary"}, "reasoning");
  const std::string summary = string_field(*reasoning, "summary");
  const std::string generated = string_field(*reasoning, "generate_summary");
  const std::string effort = string_field(*reasoning, "effort");
  if (!effort.empty() && effort != "none" && effort != "minimal" && effort != "low" &&
      effort != "medium" && effort != "high" && effort != "xhigh")
    throw bad_request("'reasoning.effort' must be none, minimal, low, medium, high or xhigh",
                      "reasoning.effort");
  const auto asks = [](const std::string &value) { return !value.empty() && value != "none"; };
  return {effort != "none" && effort != "minimal", asks(summary) || asks(generated)};
}

// A sampling setting as the client would write it: the float's shortest
// decimal form (0.95, not 0.949999988079071).
double decimal(float value) {
  return std::stod(fmt::format("{}", value));
}

json echo_of(const json &body, const CompletionSpec &spec) {
  const auto given = [&](const char *name, json fallback) {
    const json *value = field(body, name);
    return value != nullptr ? *value : fallback;
  };
  json text = given("text", json::object());
  if (!text.contains("format"))
    text["format"] = {{"type", "text"}};
  return {{"instructions", given("instructions", nullptr)},
          {"max_output_tokens", given("max_output_tokens", nullptr)},
          {"metadata", given("metadata", json::object())},
          {"parallel_tool_calls", spec.parallel_tool_calls},
          {"reasoning", given("reasoning", {{"effort", nullptr}, {"summary", nullptr}})},
          {"temperature", decimal(spec.generate.sampling.temperature)},
          {"text", std::move(text)},
          {"tool_choice", given("tool_choice", "auto")},
          {"tools", given("tools", json::array())},
          {"top_p", decimal(spec.generate.sampling.top_p)},
          {"truncation", given("truncation", "disabled")},
          {"user", given("user", nullptr)}};
}

// Every namespace's functions by their flat names (the request's tools
// were read and checked before).
NamespacedNames namespaced_names(const json &body) {
  NamespacedNames names;
  const json *tools = field(body, "tools");
  if (tools == nullptr || !tools->is_array())
    return names;
  for (const json &tool : *tools) {
    if (!tool.is_object() || tool.value("type", "") != "namespace")
      continue;
    const std::string space = tool.value("name", "");
    const json *members = field(tool, "tools");
    if (members == nullptr || !members->is_array())
      continue;
    for (const json &member : *members)
      if (member.is_object() && member.contains("name") && member["name"].is_string())
        names[flat_tool_name(space, member["name"].get<std::string>())] = {
            space, member["name"].get<std::string>()};
  }
  return names;
}

} // namespace

std::string flat_tool_name(const std::string &space, const std::string &name) {
  return space + "__" + name;
}

ResponsesRequest read_responses_request(std::string_view text, const RequestContext &context) {
  const json body = object_body(text, context.json);
  ignore_unknown_fields(body, kFields, "");
  refuse_state(body);
  check_inert_fields(body);
  ResponsesRequest out{chat_spec(body, context.model_id, "input", context), {}, false, {}};
  CompletionSpec &spec = out.spec;
  GenerateRequest &g = spec.generate;
  g.messages = input_turns(body);
  const Reasoning reasoning = reasoning_of(body);
  g.enable_thinking = reasoning.thinking;
  out.reasoning_summary = reasoning.summary;
  apply_formats(body, text, context, spec);
  out.namespaced = namespaced_names(body);
  g.n_predict =
      static_cast<int32_t>(integer_field(body, "max_output_tokens", 1, 1'000'000'000, -1));
  spec.stream = bool_field(body, "stream", false);
  SamplingParams &s = g.sampling;
  s.temperature = static_cast<float>(number_field(body, "temperature", 0.0, 2.0, s.temperature));
  s.top_p = static_cast<float>(number_field(body, "top_p", 0.0, 1.0, s.top_p));
  // top_logprobs 0..20: each output_text part carries its tokens' log
  // probabilities (with `include` asking for them or not: a client that
  // sets top_logprobs reads them).
  if (field(body, "top_logprobs") != nullptr) {
    g.top_logprobs = static_cast<int32_t>(integer_field(body, "top_logprobs", 0, 20, 0));
    g.logprobs = true;
  }
  check_prompt_bytes(g, context, spec.prompt_param);
  out.echo = echo_of(body, spec);
  return out;
}

} // namespace bonsai::server

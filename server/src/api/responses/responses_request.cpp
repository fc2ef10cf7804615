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
// service_tier and stream_options change nothing here and are checked for
// their type; unknown fields are refused, as OpenAI does.
const std::initializer_list<std::string_view> kFields = {"model",
                                                         "input",
                                                         "instructions",
                                                         "max_output_tokens",
                                                         "temperature",
                                                         "top_p",
                                                         "tools",
                                                         "tool_choice",
                                                         "parallel_tool_calls",
                                                         "text",
                                                         "reasoning",
                                                         "stream",
                                                         "stream_options",
                                                         "store",
                                                         "previous_response_id",
                                                         "conversation",
                                                         "background",
                                                         "metadata",
                                                         "user",
                                                         "truncation",
                                                         "include",
                                                         "service_tier",
                                                         "prompt_cache_key",
                                                         "safety_identifier"};

std::string text_value(const json &object, const char *name, const std::string &where) {
  const json *value = field(object, name);
  if (value == nullptr || !value->is_string())
    throw bad_request(fmt::format("'{}.{}' must be a string", where, name), where + "." + name);
  return value->get<std::string>();
}

// A message's content: a string or a list of input_text / output_text
// parts (what the SDKs send back of an earlier reply, refusals included).
std::string message_text(const json &content, const std::string &where) {
  if (content.is_string())
    return content.get<std::string>();
  if (!content.is_array())
    throw bad_request(fmt::format("'{}' must be a string or a list of text parts", where), where);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json &part = content[i];
    const std::string at = fmt::format("{}[{}]", where, i);
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type == "input_text" || type == "output_text") {
      check_known_fields(part, {"type", "text", "annotations", "logprobs"}, at);
      text += text_value(part, "text", at);
    } else if (type == "refusal") {
      check_known_fields(part, {"type", "refusal"}, at);
      text += text_value(part, "refusal", at);
    } else {
      throw bad_request(fmt::format("'{}' is not an input_text or output_text part; bonsai "
                                    "serves text only",
                                    at),
                        at);
    }
  }
  return text;
}

// Builds the chat turns from the input items, in order.
class Conversation {
public:
  void message(const json &item, const std::string &where) {
    check_known_fields(item, {"type", "role", "content", "id", "status"}, where);
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
    check_known_fields(item, {"type", "call_id", "name", "arguments", "id", "status"}, where);
    text_value(item, "call_id", where);
    const json *name = field(item, "name");
    if (name == nullptr)
      throw bad_request(fmt::format("'{}.name' is required", where), where + ".name");
    check_function_name(*name, where + ".name");
    assistant().tool_calls.push_back(
        {name->get<std::string>(), text_value(item, "arguments", where)});
  }

  void function_call_output(const json &item, const std::string &where) {
    check_known_fields(item, {"type", "call_id", "output", "id", "status"}, where);
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
    check_known_fields(item, {"type", "id", "summary", "content", "encrypted_content", "status"},
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
      check_known_fields((*parts)[i], {"type", "text"}, at);
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
    else
      throw bad_request(fmt::format("'{}.type' must be message, function_call, "
                                    "function_call_output or reasoning",
                                    where),
                        where + ".type");
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
    check_known_fields(*options, {"include_obfuscation"}, "stream_options");
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

// One of "tools": a function tool {"type": "function", "name",
// "description"?, "parameters"?, "strict"?}; hosted tools run on OpenAI's
// side.
FunctionTool function_tool_of(const json &tool, const std::string &where) {
  const json *type = field(tool, "type");
  if (type == nullptr || *type != "function")
    throw bad_request(fmt::format("'{}.type' must be \"function\": bonsai serve runs no hosted "
                                  "tools",
                                  where),
                      where + ".type");
  check_known_fields(tool, {"type", "name", "description", "parameters", "strict"}, where);
  bool_field(tool, "strict", false);
  return function_tool(tool, where, "parameters", false);
}

// "tool_choice": "auto", "none", "required" or {"type": "function", "name"}.
std::pair<std::string, std::string> tool_choice(const json &body) {
  const json *value = field(body, "tool_choice");
  if (value == nullptr)
    return {"auto", ""};
  if (value->is_string() && (*value == "auto" || *value == "none" || *value == "required"))
    return {value->get<std::string>(), ""};
  const json *type = value->is_object() ? field(*value, "type") : nullptr;
  const json *name = value->is_object() ? field(*value, "name") : nullptr;
  if (type == nullptr || *type != "function" || name == nullptr || !name->is_string())
    throw bad_request("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                      "{\"type\": \"function\", \"name\": ...}",
                      "tool_choice");
  check_known_fields(*value, {"type", "name"}, "tool_choice");
  return {"named", name->get<std::string>()};
}

// "text": {"format": {"type": "text" | "json_object" | "json_schema", ...},
// "verbosity"?}.
const json *text_format(const json &body) {
  const json *text = field(body, "text");
  if (text == nullptr)
    return nullptr;
  if (!text->is_object())
    throw bad_request("'text' must be an object", "text");
  check_known_fields(*text, {"format", "verbosity"}, "text");
  string_field(*text, "verbosity");
  const json *format = field(*text, "format");
  if (format == nullptr)
    return nullptr;
  const json *type = format->is_object() ? field(*format, "type") : nullptr;
  if (type == nullptr || !(*type == "text" || *type == "json_object" || *type == "json_schema"))
    throw bad_request("'text.format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                      "text.format.type");
  if (*type == "json_schema") {
    check_known_fields(*format, {"type", "name", "schema", "strict", "description"}, "text.format");
    const json *schema = field(*format, "schema");
    if (schema == nullptr || !(schema->is_object() || schema->is_boolean()))
      throw bad_request("'text.format.schema' must be a JSON Schema object", "text.format.schema");
    string_field(*format, "name");
    string_field(*format, "description");
    bool_field(*format, "strict", false);
  } else {
    check_known_fields(*format, {"type"}, "text.format");
  }
  return *type == "text" ? nullptr : format;
}

// Tools and the text format: what the model is told, what constrained
// decoding enforces.
void apply_formats(const json &body, std::string_view text, const RequestContext &context,
                   CompletionSpec &spec) {
  const std::vector<FunctionTool> tools = function_tools(body, function_tool_of);
  const auto [mode, named] = tool_choice(body);
  const json *format = text_format(body);
  spec.parallel_tool_calls = bool_field(body, "parallel_tool_calls", true);
  if (mode != "auto" && mode != "none" && tools.empty())
    throw bad_request(fmt::format("'tool_choice' \"{}\" needs 'tools'",
                                  mode == "named" ? named.substr(0, 64) : mode),
                      "tool_choice");
  const bool use_tools = mode != "none" && !tools.empty();
  if (use_tools) {
    for (const FunctionTool &tool : tools)
      spec.generate.tools.push_back(rendered_tool(tool));
    spec.parse_tool_calls = true;
  }
  if (format != nullptr && use_tools)
    throw bad_request("'text.format' together with 'tools' is not supported: the reply is either "
                      "a JSON value or function calls (set 'tool_choice' to \"none\")",
                      "text.format");
  const bool forced = mode == "required" || mode == "named";
  if (format == nullptr && !forced)
    return;
  const ojson ordered = parse_ordered_json_within(text, context.json);
  ReplyFormat &reply = spec.generate.format;
  if (format != nullptr) {
    const ojson &spec_format = ordered.at("text").at("format");
    if (spec_format.at("type") == "json_object") {
      reply.kind = ReplyFormat::Kind::json_object;
      spec.format_param = "text.format";
    } else {
      reply.kind = ReplyFormat::Kind::json_schema;
      reply.schema = spec_format.at("schema").dump();
      spec.format_param = "text.format.schema";
    }
    return;
  }
  reply.kind = ReplyFormat::Kind::tool_calls;
  reply.parallel_tool_calls = spec.parallel_tool_calls;
  const ojson &listed = ordered.at("tools");
  for (size_t i = 0; i < tools.size(); ++i)
    if (mode == "required" || tools[i].name == named) {
      const auto parameters = listed[i].find("parameters");
      reply.tools.push_back(format_tool(
          tools[i].name,
          parameters != listed[i].end() && !parameters->is_null() ? &*parameters : nullptr));
    }
  if (reply.tools.empty())
    throw bad_request(fmt::format("'tool_choice' names the function '{}', which is not in 'tools'",
                                  named.substr(0, 64)),
                      "tool_choice");
  spec.format_param = "tools";
}

// "reasoning": {"effort", "summary", "generate_summary"}: thinking is on
// unless the effort is "none" or "minimal".
bool thinking_of(const json &body) {
  const json *reasoning = field(body, "reasoning");
  if (reasoning == nullptr)
    return true;
  if (!reasoning->is_object())
    throw bad_request("'reasoning' must be an object", "reasoning");
  check_known_fields(*reasoning, {"effort", "summary", "generate_summary"}, "reasoning");
  string_field(*reasoning, "summary");
  string_field(*reasoning, "generate_summary");
  const std::string effort = string_field(*reasoning, "effort");
  if (!effort.empty() && effort != "none" && effort != "minimal" && effort != "low" &&
      effort != "medium" && effort != "high" && effort != "xhigh")
    throw bad_request("'reasoning.effort' must be none, minimal, low, medium, high or xhigh",
                      "reasoning.effort");
  return effort != "none" && effort != "minimal";
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

} // namespace

ResponsesRequest read_responses_request(std::string_view text, const RequestContext &context) {
  const json body = object_body(text, context.json);
  check_known_fields(body, kFields, "");
  refuse_state(body);
  check_inert_fields(body);
  ResponsesRequest out{chat_spec(body, context.model_id, "input", context), {}};
  CompletionSpec &spec = out.spec;
  GenerateRequest &g = spec.generate;
  g.messages = input_turns(body);
  g.enable_thinking = thinking_of(body);
  apply_formats(body, text, context, spec);
  g.n_predict =
      static_cast<int32_t>(integer_field(body, "max_output_tokens", 1, 1'000'000'000, -1));
  spec.stream = bool_field(body, "stream", false);
  SamplingParams &s = g.sampling;
  s.temperature = static_cast<float>(number_field(body, "temperature", 0.0, 2.0, s.temperature));
  s.top_p = static_cast<float>(number_field(body, "top_p", 0.0, 1.0, s.top_p));
  check_prompt_bytes(g, context, spec.prompt_param);
  out.echo = echo_of(body, spec);
  return out;
}

} // namespace bonsai::server

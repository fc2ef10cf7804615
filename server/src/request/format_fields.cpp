#include "request/format_fields.hpp"

#include <fmt/format.h>

#include "base/api_error.hpp"
#include "request/request_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The response_format type, checked; "text" when absent.
std::string format_type(const json &body) {
  const json *format = field(body, "response_format");
  if (format == nullptr)
    return "text";
  if (!format->is_object())
    throw bad_request("'response_format' must be an object", "response_format");
  const json *type = field(*format, "type");
  if (type == nullptr || !type->is_string())
    throw bad_request("'response_format.type' must be \"text\", \"json_object\" or "
                      "\"json_schema\"",
                      "response_format.type");
  const std::string name = type->get<std::string>();
  if (name != "text" && name != "json_object" && name != "json_schema")
    throw bad_request(fmt::format("'response_format.type' \"{}\" is not known; use \"text\", "
                                  "\"json_object\" or \"json_schema\"",
                                  name.substr(0, 32)),
                      "response_format.type");
  ignore_unknown_fields(*format,
                        name == "json_schema"
                            ? std::initializer_list<std::string_view>{"type", "json_schema"}
                            : std::initializer_list<std::string_view>{"type"},
                        "response_format");
  return name;
}

// The tool_choice value: "auto", "none", "required", or the named function.
struct ToolChoice {
  std::string mode = "auto";
  std::string function; // mode "named"
};

ToolChoice tool_choice(const json &body) {
  ToolChoice choice;
  const json *value = field(body, "tool_choice");
  if (value == nullptr)
    return choice;
  if (value->is_string()) {
    choice.mode = value->get<std::string>();
    if (choice.mode != "auto" && choice.mode != "none" && choice.mode != "required")
      throw bad_request("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                        "tool_choice");
    return choice;
  }
  const json *type = value->is_object() ? field(*value, "type") : nullptr;
  const json *function = value->is_object() ? field(*value, "function") : nullptr;
  const json *name =
      function != nullptr && function->is_object() ? field(*function, "name") : nullptr;
  if (type == nullptr || *type != "function" || name == nullptr || !name->is_string())
    throw bad_request("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                      "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                      "tool_choice");
  choice.mode = "named";
  choice.function = name->get<std::string>();
  return choice;
}

ReplyFormat::Tool tool_schema(const ojson &tool) {
  const ojson &function = tool.at("function");
  ReplyFormat::Tool out;
  out.name = function.at("name").get<std::string>();
  if (const auto parameters = function.find("parameters"); parameters != function.end())
    out.parameters = parameters->dump();
  return out;
}

// The function tools of `ordered` (hosted and other types are left out, as
// tool_fields.cpp tells the model) that `choice` allows.
std::vector<ReplyFormat::Tool> allowed_tools(const ojson &ordered, const ToolChoice &choice) {
  std::vector<ReplyFormat::Tool> out;
  const auto tools = ordered.find("tools");
  if (tools == ordered.end() || !tools->is_array())
    return out;
  for (const ojson &tool : *tools) {
    if (!tool.is_object() || tool.value("type", "") != "function")
      continue;
    ReplyFormat::Tool schema = tool_schema(tool);
    if (choice.mode != "named" || schema.name == choice.function)
      out.push_back(std::move(schema));
  }
  return out;
}

} // namespace

bool wants_format(const json &body) {
  if (format_type(body) != "text")
    return true;
  const ToolChoice choice = tool_choice(body);
  return choice.mode == "required" || choice.mode == "named";
}

FormatRequest format_request(const json &body, const ojson *ordered, bool parallel_tool_calls) {
  FormatRequest out;
  const std::string type = format_type(body);
  const ToolChoice choice = tool_choice(body);
  const bool forced = choice.mode == "required" || choice.mode == "named";
  if (type == "text" && !forced)
    return out;
  const std::vector<ReplyFormat::Tool> tools =
      choice.mode == "none" ? std::vector<ReplyFormat::Tool>{} : allowed_tools(*ordered, choice);
  out.format.parallel_tool_calls = parallel_tool_calls;
  if (forced) {
    // A call is required: the format applies to a later answer.
    if (tools.empty())
      throw bad_request(
          choice.mode == "named"
              ? fmt::format("'tool_choice' names the function '{}', which is not in 'tools'",
                            choice.function.substr(0, 64))
              : std::string("'tool_choice' \"required\" needs 'tools'"),
          "tool_choice");
    out.format.kind = ReplyFormat::Kind::tool_calls;
    out.format.tools = tools;
    out.param = "tools";
    return out;
  }
  out.param = "response_format";
  if (type == "json_schema") {
    const ojson &spec = ordered->at("response_format");
    const auto schema_spec = spec.find("json_schema");
    if (schema_spec == spec.end() || !schema_spec->is_object())
      throw bad_request("'response_format.json_schema' must be an object holding 'schema'",
                        "response_format.json_schema");
    for (const auto &[key, value] : schema_spec->items()) {
      if (key == "name" || key == "description") {
        if (!value.is_string())
          throw bad_request(fmt::format("'response_format.json_schema.{}' must be a string", key),
                            "response_format.json_schema." + key);
      } else if (key == "strict") {
        if (!value.is_boolean())
          throw bad_request("'response_format.json_schema.strict' must be a boolean",
                            "response_format.json_schema.strict");
      } else if (key != "schema") {
        note_ignored_field("response_format.json_schema." + key);
      }
    }
    const auto schema = schema_spec->find("schema");
    if (schema == schema_spec->end() || !(schema->is_object() || schema->is_boolean()))
      throw bad_request("'response_format.json_schema.schema' must be a JSON Schema object",
                        "response_format.json_schema.schema");
    out.format.schema = schema->dump();
    out.param = "response_format.json_schema.schema";
  }
  if (!tools.empty()) {
    // Tools and a format: tool calls, or the answer in the format.
    out.format.kind = ReplyFormat::Kind::tool_calls_or_json;
    out.format.tools = tools;
    return out;
  }
  out.format.kind =
      type == "json_object" ? ReplyFormat::Kind::json_object : ReplyFormat::Kind::json_schema;
  return out;
}

} // namespace bonsai::server

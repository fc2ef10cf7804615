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
  for (const auto &[key, value] : format->items())
    if (key != "type" && !(key == "json_schema" && name == "json_schema"))
      throw bad_request(fmt::format("'response_format.{}' is not known", key.substr(0, 32)),
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
  const json *tools = field(body, "tools");
  const bool has_tools = tools != nullptr && tools->is_array() && !tools->empty();
  if (type != "text") {
    if (has_tools && choice.mode != "none")
      throw bad_request("'response_format' together with 'tools' is not supported: the reply "
                        "is either a JSON value or tool calls (set 'tool_choice' to \"none\")",
                        "response_format");
    out.param = "response_format";
    if (type == "json_object") {
      out.format.kind = ReplyFormat::Kind::json_object;
      return out;
    }
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
        throw bad_request(
            fmt::format("'response_format.json_schema.{}' is not known", key.substr(0, 32)),
            "response_format.json_schema");
      }
    }
    const auto schema = schema_spec->find("schema");
    if (schema == schema_spec->end() || !(schema->is_object() || schema->is_boolean()))
      throw bad_request("'response_format.json_schema.schema' must be a JSON Schema object",
                        "response_format.json_schema.schema");
    out.format.kind = ReplyFormat::Kind::json_schema;
    out.format.schema = schema->dump();
    out.param = "response_format.json_schema.schema";
    return out;
  }
  if (choice.mode != "required" && choice.mode != "named")
    return out;
  if (!has_tools)
    throw bad_request(
        fmt::format("'tool_choice' \"{}\" needs 'tools'",
                    choice.mode == "named" ? choice.function.substr(0, 64) : choice.mode),
        "tool_choice");
  out.format.kind = ReplyFormat::Kind::tool_calls;
  out.format.parallel_tool_calls = parallel_tool_calls;
  out.param = "tools";
  for (const ojson &tool : ordered->at("tools")) {
    ReplyFormat::Tool schema = tool_schema(tool);
    if (choice.mode == "required" || schema.name == choice.function)
      out.format.tools.push_back(std::move(schema));
  }
  if (out.format.tools.empty())
    throw bad_request(fmt::format("'tool_choice' names the function '{}', which is not in 'tools'",
                                  choice.function.substr(0, 64)),
                      "tool_choice");
  return out;
}

} // namespace bonsai::server

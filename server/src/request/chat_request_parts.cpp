#include "request/chat_request_parts.hpp"

#include <fmt/format.h>

#include "base/api_error.hpp"
#include "request/request_fields.hpp"
#include "request/tool_fields.hpp"

namespace bonsai::server {

using json = nlohmann::json;

CompletionSpec chat_spec(const json &body, std::string model, std::string prompt_param,
                         const RequestContext &context) {
  string_field(body, "model");
  CompletionSpec spec;
  spec.model = std::move(model);
  spec.prompt_param = std::move(prompt_param);
  spec.reasoning_format = ReasoningFormat::reasoning_content;
  spec.generate.reasoning_budget = context.reasoning_budget;
  spec.generate.draft = context.draft;
  return spec;
}

std::vector<std::string> stop_list(const json *stop, const std::string &param,
                                   const RequestContext &context) {
  if (stop == nullptr)
    return {};
  std::vector<std::string> out;
  if (stop->is_string()) {
    out.push_back(stop->get<std::string>());
  } else if (stop->is_array()) {
    if (stop->size() > static_cast<size_t>(context.max_stop_strings))
      throw bad_request(fmt::format("'{}' holds {} strings; at most {} are allowed", param,
                                    stop->size(), context.max_stop_strings),
                        param);
    for (const auto &item : *stop) {
      if (!item.is_string())
        throw bad_request(fmt::format("'{}' must be a string or a list of strings", param), param);
      out.push_back(item.get<std::string>());
    }
  } else {
    throw bad_request(
        fmt::format("'{}' must be a string or a list of strings, not {}", param, type_name(*stop)),
        param);
  }
  for (const auto &s : out) {
    if (s.empty())
      throw bad_request(fmt::format("'{}' holds an empty string", param), param);
    if (s.size() > context.max_stop_string_bytes)
      throw bad_request(fmt::format("'{}' holds a string of {} bytes; at most {} are allowed",
                                    param, s.size(), context.max_stop_string_bytes),
                        param);
  }
  return out;
}

void check_prompt_bytes(const GenerateRequest &request, const RequestContext &context,
                        const std::string &param) {
  size_t bytes = request.prompt.size() + request.system_prompt.size();
  for (const ChatMessage &message : request.messages) {
    bytes += message.content.size();
    for (const ToolCall &call : message.tool_calls)
      bytes += call.name.size() + call.arguments.size();
  }
  for (const std::string &tool : request.tools)
    bytes += tool.size();
  if (bytes > context.max_prompt_bytes)
    throw bad_request(fmt::format("The prompt holds {} bytes of text; this server takes at most {}",
                                  bytes, context.max_prompt_bytes),
                      param, "context_length_exceeded");
}

std::vector<FunctionTool> function_tools(const json &body, ToolReader read) {
  const json *tools = tool_list(body);
  if (tools == nullptr)
    return {};
  std::vector<FunctionTool> out;
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string where = fmt::format("tools[{}]", i);
    if (!(*tools)[i].is_object())
      throw bad_request(fmt::format("'{}' must be an object", where), where);
    read((*tools)[i], where, fmt::format("/tools/{}", i), out);
  }
  if (out.size() > kMaxTools)
    throw bad_request(
        fmt::format("'tools' holds {} tools in all; at most {}", out.size(), kMaxTools), "tools");
  return out;
}

const nlohmann::ordered_json *ordered_schema(const nlohmann::ordered_json &ordered,
                                             const FunctionTool &tool, const char *schema) {
  const nlohmann::ordered_json &object =
      ordered.at(nlohmann::ordered_json::json_pointer(tool.pointer));
  const auto found = object.find(schema);
  return found != object.end() && !found->is_null() ? &*found : nullptr;
}

FunctionTool function_tool(const json &object, const std::string &where, const char *schema,
                           bool schema_required) {
  const json *name = field(object, "name");
  if (name == nullptr)
    throw bad_request(fmt::format("'{}.name' is required", where), where + ".name");
  check_function_name(*name, where + ".name");
  const json *description = field(object, "description");
  if (description != nullptr && !description->is_string())
    throw bad_request(fmt::format("'{}.description' must be a string", where),
                      where + ".description");
  const json *parameters = field(object, schema);
  if (parameters == nullptr && schema_required)
    throw bad_request(fmt::format("'{}.{}' is required", where, schema), where + "." + schema);
  if (parameters != nullptr && !parameters->is_object())
    throw bad_request(fmt::format("'{}.{}' must be a JSON Schema object", where, schema),
                      where + "." + schema);
  return {name->get<std::string>(), description, parameters, {}};
}

std::string rendered_tool(const FunctionTool &tool) {
  json function = {{"name", tool.name}};
  if (tool.description != nullptr)
    function["description"] = *tool.description;
  if (tool.parameters != nullptr)
    function["parameters"] = *tool.parameters;
  return python_json({{"type", "function"}, {"function", std::move(function)}});
}

ReplyFormat::Tool format_tool(const std::string &name, const nlohmann::ordered_json *parameters) {
  ReplyFormat::Tool out;
  out.name = name;
  if (parameters != nullptr)
    out.parameters = parameters->dump();
  return out;
}

std::string call_arguments_text(const json &arguments) {
  return python_json(arguments);
}

} // namespace bonsai::server

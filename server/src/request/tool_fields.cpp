#include "request/tool_fields.hpp"

#include <cctype>

#include <fmt/format.h>

#include "base/api_error.hpp"
#include "request/request_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxNameBytes = 64; // OpenAI's limit on a function name

void append_python(const json &value, std::string &out) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto &[key, item] : value.items()) {
      if (!first)
        out += ", ";
      first = false;
      out += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
      out += ": ";
      append_python(item, out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0)
        out += ", ";
      append_python(value[i], out);
    }
    out += ']';
  } else {
    out += value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// One entry of `tools`: {"type": "function", "function": {"name", "description"?,
// "parameters"?, "strict"?}}. Another type (a hosted tool, a custom grammar
// tool) is left out with a warning: false.
bool check_tool(const json &tool, size_t index) {
  const std::string where = fmt::format("tools[{}]", index);
  if (!tool.is_object())
    throw bad_request(fmt::format("'{}' must be an object", where), where);
  const json *type = field(tool, "type");
  if (type == nullptr || !type->is_string())
    throw bad_request(fmt::format("'{}.type' must be \"function\"", where), where + ".type");
  if (*type != "function") {
    note_warning(fmt::format("{}: the '{}' tool was left out (bonsai serves function tools)", where,
                             type->get_ref<const std::string &>().substr(0, 32)));
    return false;
  }
  ignore_unknown_fields(tool, {"type", "function"}, where);
  const json *function = field(tool, "function");
  if (function == nullptr || !function->is_object())
    throw bad_request(fmt::format("'{}.function' must be an object", where), where + ".function");
  ignore_unknown_fields(*function, {"name", "description", "parameters", "strict"},
                        where + ".function");
  const json *name = field(*function, "name");
  if (name == nullptr)
    throw bad_request(fmt::format("'{}.function.name' is required", where),
                      where + ".function.name");
  check_function_name(*name, where + ".function.name");
  if (const json *description = field(*function, "description");
      description != nullptr && !description->is_string())
    throw bad_request(fmt::format("'{}.function.description' must be a string", where),
                      where + ".function.description");
  if (const json *parameters = field(*function, "parameters");
      parameters != nullptr && !parameters->is_object())
    throw bad_request(fmt::format("'{}.function.parameters' must be a JSON Schema object", where),
                      where + ".function.parameters");
  return true;
}

} // namespace

void check_function_name(const json &name, const std::string &where) {
  if (!name.is_string())
    throw bad_request(fmt::format("'{}' must be a string", where), where);
  const std::string &text = name.get_ref<const std::string &>();
  if (text.empty() || text.size() > kMaxNameBytes)
    throw bad_request(fmt::format("'{}' must be 1 to {} characters", where, kMaxNameBytes), where);
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
      throw bad_request(fmt::format("'{}' may hold only letters, digits, '_' and '-'", where),
                        where);
}

const json *tool_list(const json &body) {
  const json *tools = field(body, "tools");
  if (tools == nullptr)
    return nullptr;
  if (!tools->is_array())
    throw bad_request("'tools' must be a list", "tools");
  if (tools->size() > kMaxTools)
    throw bad_request(fmt::format("'tools' holds {} tools; at most {}", tools->size(), kMaxTools),
                      "tools");
  return tools;
}

std::string python_json(const json &value) {
  std::string out;
  append_python(value, out);
  return out;
}

ToolsRequest tools_request(const json &body) {
  ToolsRequest request;
  request.parallel = bool_field(body, "parallel_tool_calls", true);
  if (const json *tools = tool_list(body); tools != nullptr) {
    for (size_t i = 0; i < tools->size(); ++i)
      if (check_tool((*tools)[i], i)) {
        // As the template lists it: the fields it knows, in the client's order.
        const json &function = (*tools)[i].at("function");
        json listed = {{"type", "function"}, {"function", json::object()}};
        for (const char *key : {"name", "description", "parameters", "strict"})
          if (const auto it = function.find(key); it != function.end())
            listed["function"][key] = *it;
        request.rendered.push_back(python_json(listed));
      }
  }
  // "none": the model is not told about the tools, and nothing is parsed.
  // (format_fields.cpp checks the field and enforces "required" and a named
  // function.)
  if (const json *choice = field(body, "tool_choice");
      choice != nullptr && choice->is_string() && *choice == "none")
    request.rendered.clear();
  request.parse_calls = !request.rendered.empty();
  return request;
}

} // namespace bonsai::server

#pragma once
// The tool fields of a chat request (docs/server.md, "Tools"): `tools`,
// `tool_choice`, `parallel_tool_calls`, and the JSON text the chat template
// writes for them. Each helper throws ApiError 400 naming the field.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bonsai::server {

struct ToolsRequest {
  std::vector<std::string> rendered; // each tool as the template lists it (python_json)
  bool parse_calls = false;          // tools offered and tool_choice not "none"
  bool parallel = true;              // parallel_tool_calls: false keeps the first call only
};

ToolsRequest tools_request(const nlohmann::json &body);

// Most tools a request may offer.
constexpr size_t kMaxTools = 128;
// "tools", checked to be a list of at most kMaxTools; nullptr when absent.
const nlohmann::json *tool_list(const nlohmann::json &body);
// A function name: 1 to 64 letters, digits, '_' or '-' (OpenAI's rule);
// `where` names the field.
void check_function_name(const nlohmann::json &name, const std::string &where);

// `value` as Python's json.dumps writes it, what Qwen3's template prints with
// `tojson`: ", " and ": " between items, non-ASCII text as it is.
std::string python_json(const nlohmann::json &value);

} // namespace bonsai::server

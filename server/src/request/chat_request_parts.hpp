#pragma once
// Parts of a request that every chat API has in its own spelling (Chat
// Completions, Responses, Messages, Ollama): stop strings, the prompt-size
// limit, and function tools as the chat template lists them and as
// constrained decoding enforces them. Each throws ApiError 400 naming the
// field.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bonsai/engine.hpp"
#include "request/completion_spec.hpp"

namespace bonsai::server {

// The spec every chat API's request starts from: `model` (the served model
// as the API names it), the field prompt errors are reported against, the
// server's reasoning budget and draft settings, and reasoning told apart
// (each API's writer shows or drops it). body["model"] is checked for its
// type: any name asks for the one model served.
CompletionSpec chat_spec(const nlohmann::json &body, std::string model, std::string prompt_param,
                         const RequestContext &context);

// `stop`: a string or a list of strings (absent: none), held to the
// context's count and length limits; `param` names the field.
std::vector<std::string> stop_list(const nlohmann::json *stop, const std::string &param,
                                   const RequestContext &context);

// Refuses prompt text past the limit before the tokenizer sees it.
void check_prompt_bytes(const GenerateRequest &request, const RequestContext &context,
                        const std::string &param);

// A function tool as an API describes it: its name (already checked with
// check_function_name), description and arguments' schema (either may be
// null), and where it stands in the body as a JSON pointer ("/tools/3", or
// "/tools/3/tools/0" inside a group), where the schema is read again in the
// client's key order.
struct FunctionTool {
  std::string name;
  const nlohmann::json *description = nullptr;
  const nlohmann::json *parameters = nullptr;
  std::string pointer;
};

// Reads one entry of "tools" (an object; `where` names it, "tools[i]",
// `pointer` is "/tools/i") into `out`: no tool when it is left out (a hosted
// tool, with a warning), several for a group.
using ToolReader = void (*)(const nlohmann::json &tool, const std::string &where,
                            const std::string &pointer, std::vector<FunctionTool> &out);
// The "tools" list (absent: none): at most kMaxTools objects, each read by
// `read`.
std::vector<FunctionTool> function_tools(const nlohmann::json &body, ToolReader read);
// The schema of `tool` in `ordered` (the body with its keys in the client's
// order) under the field `schema`; nullptr when it has none.
const nlohmann::ordered_json *ordered_schema(const nlohmann::ordered_json &ordered,
                                             const FunctionTool &tool, const char *schema);
// The name (required), description and arguments' schema (the field
// `schema`, an object) of a function described by `object`.
FunctionTool function_tool(const nlohmann::json &object, const std::string &where,
                           const char *schema, bool schema_required);

// The tool as Qwen3's template lists it: OpenAI's {"type": "function",
// "function": {...}} written as python_json writes it, so that every API
// gives the model the prompt it was trained on.
std::string rendered_tool(const FunctionTool &tool);

// The tool for constrained decoding: `parameters` read in the client's key
// order (null: any object).
ReplyFormat::Tool format_tool(const std::string &name, const nlohmann::ordered_json *parameters);

// The JSON text of a tool call's arguments given as an object, as Qwen3's
// template writes it into the prompt (python_json).
std::string call_arguments_text(const nlohmann::json &arguments);

} // namespace bonsai::server

#include "api/ollama/ollama_request.hpp"

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

const std::initializer_list<std::string_view> kChatFields = {
    "model",  "messages",   "tools", "format",   "options",
    "stream", "keep_alive", "think", "logprobs", "top_logprobs"};
const std::initializer_list<std::string_view> kGenerateFields = {
    "model",  "prompt", "suffix",     "system",  "template", "context",  "stream",      "raw",
    "format", "images", "keep_alive", "options", "think",    "logprobs", "top_logprobs"};

// Options that size or place the model when it loads: bonsai's model is
// loaded once with the server's own settings, so they change nothing here.
const std::initializer_list<std::string_view> kLoadOptions = {
    "num_keep",   "numa",       "num_batch", "num_gpu",   "main_gpu",       "low_vram",  "f16_kv",
    "logits_all", "vocab_only", "use_mmap",  "use_mlock", "embedding_only", "num_thread"};

bool is_load_option(std::string_view name) {
  return std::find(kLoadOptions.begin(), kLoadOptions.end(), name) != kLoadOptions.end();
}

// "options": the sampling and length settings bonsai honours; load-time
// options are accepted and change nothing; samplers bonsai does not have are
// refused unless they ask for their default (off); any other key is ignored
// with a log line, as Ollama does (field_notes.hpp).
void apply_options(const json &body, CompletionSpec &spec, const RequestContext &context) {
  const json *options = field(body, "options");
  if (options == nullptr)
    return;
  if (!options->is_object())
    throw bad_request("'options' must be an object", "options");
  for (const auto &[key, value] : options->items()) {
    if (is_load_option(key))
      continue;
    if (key == "mirostat" && (value.is_null() || value == 0))
      continue;
    if ((key == "typical_p" || key == "tfs_z") && (value.is_null() || value == 1))
      continue;
    if (key == "mirostat_tau" || key == "mirostat_eta" || key == "penalize_newline")
      continue; // no effect without mirostat, and no effect in Ollama either
    static const std::initializer_list<std::string_view> honoured = {"num_predict",
                                                                     "temperature",
                                                                     "top_p",
                                                                     "top_k",
                                                                     "min_p",
                                                                     "seed",
                                                                     "stop",
                                                                     "num_ctx",
                                                                     "repeat_penalty",
                                                                     "repeat_last_n",
                                                                     "presence_penalty",
                                                                     "frequency_penalty"};
    if (std::find(honoured.begin(), honoured.end(), key) != honoured.end())
      continue;
    const std::string name = fmt::format("options.{}", key.substr(0, 64));
    if (key == "mirostat" || key == "typical_p" || key == "tfs_z")
      throw bad_request(fmt::format("'{}' is not supported by bonsai serve (its sampler has "
                                    "temperature, top_k, top_p, min_p and the penalties)",
                                    name),
                        name);
    note_ignored_field(name);
  }
  GenerateRequest &g = spec.generate;
  SamplingParams &s = g.sampling;
  s.temperature =
      static_cast<float>(number_field(*options, "temperature", 0.0, 2.0, s.temperature));
  s.top_p = static_cast<float>(number_field(*options, "top_p", 0.0, 1.0, s.top_p));
  s.top_k = static_cast<int32_t>(integer_field(*options, "top_k", 0, 1'000'000, s.top_k));
  s.min_p = static_cast<float>(number_field(*options, "min_p", 0.0, 1.0, s.min_p));
  s.repeat_penalty =
      static_cast<float>(number_field(*options, "repeat_penalty", 0.01, 10.0, s.repeat_penalty));
  s.repeat_last_n =
      static_cast<int32_t>(integer_field(*options, "repeat_last_n", 0, 1'000'000, s.repeat_last_n));
  s.presence_penalty =
      static_cast<float>(number_field(*options, "presence_penalty", -2.0, 2.0, s.presence_penalty));
  s.frequency_penalty = static_cast<float>(
      number_field(*options, "frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  if (field(*options, "seed") != nullptr)
    s.seed = static_cast<uint64_t>(integer_field(*options, "seed", INT64_MIN, INT64_MAX, 0));
  // -1: no limit; -2: until the context is full, which is the same here.
  const int64_t predict = integer_field(*options, "num_predict", -2, 1'000'000'000, -1);
  g.n_predict = predict <= 0 ? (predict == 0 ? 0 : -1) : static_cast<int32_t>(predict);
  if (g.n_predict == 0)
    throw bad_request("'options.num_predict' must not be 0", "options.num_predict");
  g.stop_strings = stop_list(field(*options, "stop"), "options.stop", context);
  spec.n_ctx = static_cast<int32_t>(integer_field(*options, "num_ctx", 1, INT32_MAX, 0));
}

FunctionTool ollama_tool_of(const json &tool, const std::string &where);
void ollama_tool(const json &tool, const std::string &where, const std::string &pointer,
                 std::vector<FunctionTool> &out);

// "format": "json" (any JSON object) or a JSON Schema; "" for none. With
// tools, the reply is either calls or the value (one grammar for both).
void apply_format(const json &body, std::string_view text, const RequestContext &context,
                  CompletionSpec &spec) {
  const json *format = field(body, "format");
  if (format == nullptr || (format->is_string() && format->get_ref<const std::string &>().empty()))
    return;
  ReplyFormat &reply = spec.generate.format;
  const ojson ordered = parse_ordered_json_within(text, context.json);
  if (format->is_string() && *format == "json") {
    reply.kind = ReplyFormat::Kind::json_object;
  } else if (format->is_object()) {
    reply.kind = ReplyFormat::Kind::json_schema;
    reply.schema = ordered.at("format").dump();
  } else {
    throw bad_request("'format' must be \"json\" or a JSON Schema object", "format");
  }
  spec.format_param = "format";
  if (spec.parse_tool_calls) {
    reply.kind = ReplyFormat::Kind::tool_calls_or_json;
    for (const FunctionTool &tool : function_tools(body, ollama_tool))
      reply.tools.push_back(format_tool(tool.name, ordered_schema(ordered, tool, "parameters")));
  }
  if (!spec.generate.stop_strings.empty())
    throw bad_request("'options.stop' cannot be used with 'format': a stop string could cut the "
                      "value before it is complete",
                      "options.stop");
}

// "images": each becomes a note that it was left out (the model reads text).
std::string image_notes(const json &object, const std::string &where) {
  const json *images = field(object, "images");
  if (images == nullptr)
    return {};
  if (!images->is_array())
    throw bad_request(fmt::format("'{}' must be a list", where), where);
  std::string notes;
  for (size_t i = 0; i < images->size(); ++i) {
    if (!notes.empty())
      notes.append("\n");
    notes.append(left_out_note("an image", fmt::format("{}[{}]", where, i)));
  }
  return notes;
}

std::vector<ChatMessage> chat_messages_of(const json &body) {
  const json *messages = field(body, "messages");
  if (messages == nullptr)
    return {};
  if (!messages->is_array())
    throw bad_request("'messages' must be a list", "messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json &m = (*messages)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object())
      throw bad_request(fmt::format("'{}' must be an object", where), where);
    ignore_unknown_fields(
        m, {"role", "content", "images", "tool_calls", "thinking", "tool_name", "tool_call_id"},
        where);
    const std::string role = string_field(m, "role");
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      throw bad_request(fmt::format("'{}.role' must be system, user, assistant or tool", where),
                        where + ".role");
    string_field(m, "tool_name");
    string_field(m, "tool_call_id");
    ChatMessage message{role, string_field(m, "content")};
    if (const std::string notes = image_notes(m, where + ".images"); !notes.empty())
      message.content.append(message.content.empty() ? "" : "\n\n").append(notes);
    if (const json *calls = field(m, "tool_calls"); calls != nullptr) {
      if (role != "assistant")
        throw bad_request(fmt::format("'{}.tool_calls' belongs to assistant messages", where),
                          where + ".tool_calls");
      message.tool_calls = message_tool_calls(*calls, where + ".tool_calls");
    }
    // An earlier reply's thinking goes back in its think block.
    if (const std::string thinking = string_field(m, "thinking");
        role == "assistant" && !thinking.empty())
      message.content = "<think>\n" + thinking + "\n</think>\n\n" + message.content;
    out.push_back(std::move(message));
  }
  return out;
}

// One of "tools": OpenAI's function shape, {"type": "function", "function":
// {"name", "description"?, "parameters"?}}.
FunctionTool ollama_tool_of(const json &tool, const std::string &where) {
  const json *function = field(tool, "function");
  const json *type = field(tool, "type");
  if (function == nullptr || !function->is_object() || type == nullptr || *type != "function")
    throw bad_request(fmt::format("'{}' must be {{\"type\": \"function\", \"function\": "
                                  "{{\"name\", \"description\", \"parameters\"}}}}",
                                  where),
                      where);
  ignore_unknown_fields(tool, {"type", "function"}, where);
  ignore_unknown_fields(*function, {"name", "description", "parameters"}, where + ".function");
  return function_tool(*function, where + ".function", "parameters", false);
}

void ollama_tool(const json &tool, const std::string &where, const std::string &pointer,
                 std::vector<FunctionTool> &out) {
  FunctionTool function = ollama_tool_of(tool, where);
  function.pointer = pointer + "/function";
  out.push_back(std::move(function));
}

void apply_tools(const json &body, CompletionSpec &spec) {
  for (const FunctionTool &tool : function_tools(body, ollama_tool))
    spec.generate.tools.push_back(rendered_tool(tool));
  spec.parse_tool_calls = !spec.generate.tools.empty();
}

// "think": true, false, or an effort ("high", "medium", "low"); absent:
// thinking on, as Ollama does for thinking models.
bool thinking_of(const json &body) {
  const json *think = field(body, "think");
  if (think == nullptr)
    return true;
  if (think->is_boolean())
    return think->get<bool>();
  if (think->is_string() && (*think == "high" || *think == "medium" || *think == "low"))
    return true;
  throw bad_request("'think' must be true, false, \"high\", \"medium\" or \"low\"", "think");
}

void check_inert_fields(const json &body) {
  if (const json *keep = field(body, "keep_alive");
      keep != nullptr && !keep->is_string() && !keep->is_number())
    throw bad_request("'keep_alive' must be a duration such as \"5m\" or a number of seconds",
                      "keep_alive");
  if (bool_field(body, "logprobs", false) || integer_field(body, "top_logprobs", 0, 20, 0) > 0)
    throw bad_request("'logprobs' is not supported on Ollama's API by bonsai serve; "
                      "/v1/chat/completions has it",
                      "logprobs");
}

// /api/generate's prompt: with the chat template (and `system`), or raw.
void apply_generate_prompt(const json &body, CompletionSpec &spec, OllamaRequest &out) {
  for (const char *name : {"suffix", "template"})
    if (!string_field(body, name).empty())
      throw bad_request(fmt::format("'{}' is not supported by bonsai serve", name), name);
  if (const json *context = field(body, "context");
      context != nullptr && !(context->is_array() && context->empty()))
    throw bad_request("'context' is not supported: send the conversation to /api/chat", "context");
  std::string prompt = string_field(body, "prompt");
  if (std::string notes = image_notes(body, "images"); !notes.empty())
    prompt = notes.append("\n\n").append(prompt);
  const std::string system = string_field(body, "system");
  out.load_only = prompt.empty();
  if (bool_field(body, "raw", false)) {
    if (!system.empty())
      throw bad_request("'system' has no place in a raw prompt", "system");
    spec.endpoint = Endpoint::completion;
    spec.generate.prompt = prompt;
    spec.generate.parse_special = true;
    return;
  }
  if (!system.empty())
    spec.generate.messages.push_back({"system", system});
  spec.generate.messages.push_back({"user", prompt});
}

} // namespace

std::string ollama_model_name(const std::string &model_id) {
  return model_id.find(':') == std::string::npos ? model_id + ":latest" : model_id;
}

OllamaRequest read_ollama_request(std::string_view text, const RequestContext &context,
                                  OllamaEndpoint endpoint) {
  const json body = object_body(text, context.json);
  const bool chat = endpoint == OllamaEndpoint::chat;
  ignore_unknown_fields(body, chat ? kChatFields : kGenerateFields, "");
  check_inert_fields(body);
  OllamaRequest out{
      chat_spec(body, ollama_model_name(context.model_id), chat ? "messages" : "prompt", context),
      false, false};
  CompletionSpec &spec = out.spec;
  GenerateRequest &g = spec.generate;
  spec.stream = bool_field(body, "stream", true); // Ollama streams unless told not to
  g.n_predict = -1;
  if (chat) {
    g.messages = chat_messages_of(body);
    out.load_only = g.messages.empty();
    if (!g.messages.empty() && g.messages.back().role == "assistant")
      throw bad_request("The last message is the assistant's: bonsai does not continue an "
                        "assistant message; end 'messages' with a user or tool message",
                        "messages");
    apply_tools(body, spec);
  } else {
    apply_generate_prompt(body, spec, out);
  }
  g.enable_thinking = thinking_of(body);
  out.hide_thinking = !g.enable_thinking;
  apply_options(body, spec, context);
  apply_format(body, text, context, spec);
  check_prompt_bytes(g, context, spec.prompt_param);
  return out;
}

} // namespace bonsai::server

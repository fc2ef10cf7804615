#include "api/llama/utility_endpoints.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/api_error.hpp"
#include "reply/token_text.hpp"
#include "request/json_limits.hpp"
#include "request/request_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// The body as an object with only `known` fields.
json object_body(std::string_view text, const RequestContext &context,
                 std::initializer_list<std::string_view> known) {
  json body = object_body(text, context.json);
  ignore_unknown_fields(body, known, "");
  return body;
}

std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

std::string tokenize_body(const Engine &engine, const RequestContext &context,
                          std::string_view text) {
  const json body =
      object_body(text, context, {"content", "add_special", "parse_special", "with_pieces"});
  const json *content = field(body, "content");
  if (content == nullptr || !content->is_string())
    throw bad_request("'content' must be a string", "content");
  const std::string &input = content->get_ref<const std::string &>();
  if (input.size() > context.max_prompt_bytes)
    throw bad_request(fmt::format("'content' holds {} bytes; this server takes at most {}",
                                  input.size(), context.max_prompt_bytes),
                      "content");
  // Qwen3 files add no BOS, so add_special changes nothing; it is accepted
  // for the clients that send it.
  bool_field(body, "add_special", false);
  const bool parse_special = bool_field(body, "parse_special", true);
  const bool with_pieces = bool_field(body, "with_pieces", false);
  std::vector<int32_t> tokens;
  try {
    tokens = engine.tokenize(input, parse_special);
  } catch (const InvalidArgument &error) {
    throw bad_request(error.what(), "content");
  }
  json out = json::array();
  for (const int32_t id : tokens) {
    if (!with_pieces) {
      out.push_back(id);
      continue;
    }
    const std::string piece = engine.token_piece(id);
    if (is_valid_utf8(piece))
      out.push_back({{"id", id}, {"piece", piece}});
    else
      out.push_back({{"id", id}, {"piece", std::vector<uint8_t>(piece.begin(), piece.end())}});
  }
  return dump({{"tokens", out}});
}

std::string detokenize_body(const Engine &engine, const RequestContext &context,
                            std::string_view text) {
  const json body = object_body(text, context, {"tokens"});
  const json *tokens = field(body, "tokens");
  if (tokens == nullptr || !tokens->is_array())
    throw bad_request("'tokens' must be a list of token ids", "tokens");
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const json &id = (*tokens)[i];
    const std::string where = fmt::format("tokens[{}]", i);
    if (!id.is_number_integer())
      throw bad_request(fmt::format("'{}' must be an integer, not {}", where, type_name(id)),
                        where);
    const bool in_range = id.is_number_unsigned()
                              ? id.get<uint64_t>() < static_cast<uint64_t>(engine.n_vocab())
                              : id.get<int64_t>() >= 0 && id.get<int64_t>() < engine.n_vocab();
    if (!in_range)
      throw bad_request(fmt::format("'{}' is {}, not a token id of this model (0..{})", where,
                                    id.dump(), engine.n_vocab() - 1),
                        where);
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return dump({{"content", engine.detokenize(ids)}});
}

std::string apply_template_body(const Engine &engine, const RequestContext &context,
                                std::string_view text) {
  const json body = object_body(
      text, context,
      {"messages", "add_generation_prompt", "enable_thinking", "chat_template_kwargs", "model"});
  const std::vector<ChatMessage> messages = chat_messages(body);
  size_t bytes = 0;
  for (const ChatMessage &message : messages)
    bytes += message.content.size();
  if (bytes > context.max_prompt_bytes)
    throw bad_request(
        fmt::format("The messages hold {} bytes of text; this server takes at most {}", bytes,
                    context.max_prompt_bytes),
        "messages");
  string_field(body, "model"); // any name asks for the one model served
  const bool generation = bool_field(body, "add_generation_prompt", true);
  try {
    return dump({{"prompt", engine.apply_chat_template(messages, generation, thinking(body))}});
  } catch (const InvalidArgument &error) {
    throw bad_request(error.what(), "messages");
  }
}

std::string props_body(const Engine &engine, const PropsFacts &facts) {
  const ModelInfo &model = engine.model();
  return dump({{"model", facts.model_id},
               {"model_path", facts.model_path},
               {"n_ctx", facts.n_ctx},
               {"total_slots", facts.total_slots},
               {"default_generation_settings", {{"n_ctx", facts.n_ctx}}},
               {"n_vocab", engine.n_vocab()},
               {"n_ctx_train", model.n_ctx_train},
               // What requests may ask for: only what bonsai serve honours.
               {"capabilities",
                {{"completion", true},
                 {"chat", true},
                 {"streaming", true},
                 {"tools", true},     // tool_choice auto and none (docs/server.md, "Tools")
                 {"reasoning", true}, // reasoning_content (docs/server.md, "Reasoning")
                 {"json_schema", true},
                 {"logprobs", true}}}});
}

} // namespace bonsai::server

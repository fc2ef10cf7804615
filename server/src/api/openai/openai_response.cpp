#include "api/openai/openai_response.hpp"

#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reply/token_logprobs.hpp"
#include "reply/token_text.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// Generated text can end inside a character when a reply is cut by length;
// the decoder already replaces such bytes, and this keeps dump() from ever
// throwing on what a model emitted.
std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json usage_json(const JobUsage &usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

json finish_json(std::optional<Finish> finish, bool called_tools) {
  if (!finish)
    return nullptr;
  return called_tools && *finish == Finish::stop ? json("tool_calls")
                                                 : json(finish_reason(*finish));
}

json base(const ResponseHeader &header, const char *object) {
  return {{"id", header.id},
          {"object", object},
          {"created", header.created},
          {"model", header.model},
          {"system_fingerprint", "bonsai"}};
}

} // namespace

ResponseHeader new_response_header(const CompletionSpec &spec) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  ResponseHeader header;
  header.endpoint = spec.endpoint;
  header.id = fmt::format("{}-{:016x}{:04x}", spec.endpoint == Endpoint::chat ? "chatcmpl" : "cmpl",
                          rng(), counter.fetch_add(1) & 0xffff);
  header.created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  header.model = spec.model;
  if (spec.reasoning_format == ReasoningFormat::reasoning)
    header.reasoning_field = "reasoning";
  return header;
}

const char *finish_reason(Finish finish) {
  return finish == Finish::length ? "length" : "stop";
}

std::string models_body(const ModelFacts &model) {
  return dump({{"object", "list"},
               {"data", json::array({{{"id", model.id},
                                      {"object", "model"},
                                      {"created", model.created},
                                      {"owned_by", "bonsai"},
                                      {"context_length", model.n_ctx},
                                      {"meta",
                                       {{"n_ctx", model.n_ctx},
                                        {"n_ctx_train", model.n_ctx_train},
                                        {"n_vocab", model.n_vocab},
                                        {"n_params", model.n_params},
                                        {"size", model.size}}}}})}});
}

json logprobs_json(Endpoint endpoint, const std::vector<StepLogprobs> &entries, size_t &offset) {
  if (endpoint == Endpoint::chat)
    return {{"content", token_logprob_list(entries)}, {"refusal", nullptr}};
  json tokens = json::array(), token_logprobs = json::array(), tops = json::array(),
       offsets = json::array();
  bool any_top = false;
  for (const StepLogprobs &e : entries) {
    tokens.push_back(legacy_token_text(e.chosen.bytes));
    token_logprobs.push_back(e.chosen.logprob);
    json top = json::object();
    for (const TokenLogprob &alt : e.top)
      top[legacy_token_text(alt.bytes)] = alt.logprob;
    any_top = any_top || !e.top.empty();
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += e.chosen.bytes.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", any_top ? std::move(tops) : json(nullptr)},
          {"text_offset", std::move(offsets)}};
}

json choice_json(const ResponseHeader &header, int32_t index, const ReplyParts &reply,
                 const std::vector<ParsedToolCall> &calls, Finish finish, const json *logprobs) {
  const bool chat = header.endpoint == Endpoint::chat;
  json choice = {{"index", index},
                 {"finish_reason", finish_json(finish, !calls.empty())},
                 {"logprobs", logprobs != nullptr ? *logprobs : json(nullptr)}};
  if (chat) {
    json message = {{"role", "assistant"}, {"content", reply.content}};
    if (!reply.reasoning.empty())
      message[header.reasoning_field] = reply.reasoning;
    if (!calls.empty()) {
      if (reply.content.empty())
        message["content"] = nullptr;
      json list = json::array();
      for (const ParsedToolCall &call : calls)
        list.push_back({{"id", call.id},
                        {"type", "function"},
                        {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      message["tool_calls"] = std::move(list);
    }
    choice["message"] = std::move(message);
  } else {
    choice["text"] = reply.content;
  }
  return choice;
}

std::string completion_body(const ResponseHeader &header, const std::vector<json> &choices,
                            const JobUsage &usage) {
  json body =
      base(header, header.endpoint == Endpoint::chat ? "chat.completion" : "text_completion");
  body["choices"] = choices;
  body["usage"] = usage_json(usage);
  return dump(body);
}

std::string chunk_body(const ResponseHeader &header, const ReplyParts &piece,
                       const ChunkSpec &chunk) {
  const bool chat = header.endpoint == Endpoint::chat;
  json body = base(header, chat ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", chunk.index},
                 {"finish_reason", finish_json(chunk.finish, chunk.called_tools)},
                 {"logprobs", chunk.logprobs != nullptr ? *chunk.logprobs : json(nullptr)}};
  if (chat) {
    json delta = json::object();
    if (chunk.first)
      delta["role"] = "assistant";
    if (!piece.reasoning.empty())
      delta[header.reasoning_field] = piece.reasoning;
    if (!piece.content.empty() || (chunk.first && !chunk.finish && piece.reasoning.empty()))
      delta["content"] = piece.content;
    choice["delta"] = delta;
  } else {
    choice["text"] = piece.content;
  }
  body["choices"] = json::array({choice});
  return dump(body);
}

std::vector<std::string> tool_call_chunk_bodies(const ResponseHeader &header,
                                                const ParsedToolCall &call, size_t call_index,
                                                const ChunkSpec &spec) {
  std::vector<std::string> chunks;
  const auto chunk = [&](json delta) {
    json body = base(header, "chat.completion.chunk");
    body["choices"] = json::array({{{"index", spec.index},
                                    {"delta", std::move(delta)},
                                    {"finish_reason", nullptr},
                                    {"logprobs", nullptr}}});
    chunks.push_back(dump(body));
  };
  json opening = {
      {"tool_calls", json::array({{{"index", call_index},
                                   {"id", call.id},
                                   {"type", "function"},
                                   {"function", {{"name", call.name}, {"arguments", ""}}}}})}};
  if (spec.first)
    opening["role"] = "assistant";
  chunk(std::move(opening));
  chunk({{"tool_calls",
          json::array({{{"index", call_index}, {"function", {{"arguments", call.arguments}}}}})}});
  return chunks;
}

std::string usage_chunk_body(const ResponseHeader &header, const JobUsage &usage) {
  json body =
      base(header, header.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion");
  body["choices"] = json::array();
  body["usage"] = usage_json(usage);
  return dump(body);
}

} // namespace bonsai::server

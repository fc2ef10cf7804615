#pragma once
// The one internal request every API's reader produces (CompletionSpec) and
// what a request is checked against besides its own fields (RequestContext).
#include <string>

#include "bonsai/engine.hpp"
#include "bonsai/server.hpp"

namespace bonsai::server {

enum class Endpoint { chat, completion };

struct CompletionSpec {
  Endpoint endpoint = Endpoint::chat;
  // messages (chat), or prompt / prompt_tokens (completion); n_predict,
  // sampling, stop strings, enable_thinking.
  GenerateRequest generate;
  bool stream = false;
  int32_t n = 1;              // choices (1..16), each its own job
  bool include_usage = false; // stream_options.include_usage
  std::string model;          // the model id to echo back
  // Chat: where the think block goes, and whether the prompt already opened
  // one (set once the prompt is tokenized).
  ReasoningFormat reasoning_format = ReasoningFormat::reasoning_content;
  bool reasoning_open = false;
  // Chat with tools (tool_choice not "none"): <tool_call> blocks in the reply
  // become tool_calls; parallel_tool_calls false keeps the first only.
  bool parse_tool_calls = false;
  bool parallel_tool_calls = true;
  // The field a FormatError about GenerateRequest::format is reported against.
  std::string format_param;
  // The field a prompt that cannot be tokenized or does not fit is reported
  // against ("messages", "prompt", "input").
  std::string prompt_param = "messages";
  // Positions the request may fill, prompt and reply (Ollama's num_ctx);
  // 0: the slot's whole context.
  int32_t n_ctx = 0;
};

// What a request is checked against besides its own fields.
struct RequestContext {
  std::string model_id; // the one model served, whatever name a request gives
  int32_t n_vocab = 0;  // token ids of a prompt must be below it; 0: not checked
  JsonLimits json;
  size_t max_prompt_bytes = 1 << 20; // message contents, or the prompt text
  int32_t max_stop_strings = 16;
  size_t max_stop_string_bytes = 1024;
  ReasoningFormat reasoning_format = ReasoningFormat::reasoning_content; // the server's default
  int32_t reasoning_budget = -1;                                         // the server's default
  int32_t n_predict = -1; // the server's cap on every reply's tokens; -1: none
  // Speculative decoding as the server runs it (ngram, max, min, adaptive;
  // `model` unused): requests may lower max.
  DraftOptions draft;
};

} // namespace bonsai::server

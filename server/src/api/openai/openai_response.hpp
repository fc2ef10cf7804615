#pragma once
// The JSON bodies bonsai serve answers with, in OpenAI's shapes: a whole
// completion, the chunks of a streamed one, the model list, errors.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/api_error.hpp"
#include "reply/reasoning_split.hpp"
#include "reply/tool_calls.hpp"
#include "schedule/job.hpp"

namespace bonsai::server {

// What every body of one response shares.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::chat;
  std::string id;      // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0; // Unix seconds
  std::string model;
  // Chat: the field reasoning goes in ("reasoning_content" or "reasoning").
  const char *reasoning_field = "reasoning_content";
};

ResponseHeader new_response_header(const CompletionSpec &spec);

// "stop" or "length" (a cancelled or failed job has no OpenAI reason).
const char *finish_reason(Finish finish);

// GET /v1/models: the one model, with the context each request may use
// ("context_length", and llama-server's "meta").
struct ModelFacts {
  std::string id;
  int64_t created = 0;
  int32_t n_ctx = 0;       // positions per request
  int32_t n_ctx_train = 0; // the model's training context
  int32_t n_vocab = 0;
  uint64_t n_params = 0;
  uint64_t size = 0; // bytes of the weights
};
std::string models_body(const ModelFacts &model);
// One choice of a whole reply; `reply.reasoning` only for a chat
// (message.<reasoning_field>, left out when empty). With `calls`,
// message.tool_calls lists them, content is null when empty, and a reply that
// stopped has finish_reason "tool_calls". `logprobs`: the choice's logprobs
// (logprobs_json), null when not given.
nlohmann::json choice_json(const ResponseHeader &header, int32_t index, const ReplyParts &reply,
                           const std::vector<ParsedToolCall> &calls, Finish finish,
                           const nlohmann::json *logprobs = nullptr);
// A whole reply of `choices` (choice_json), in index order.
std::string completion_body(const ResponseHeader &header,
                            const std::vector<nlohmann::json> &choices, const JobUsage &usage);

// What one streamed chunk says besides its text.
struct ChunkSpec {
  int32_t index = 0;                        // the choice
  std::optional<Finish> finish;             // on the choice's last chunk
  bool first = false;                       // the choice's first chunk: it carries the role
  bool called_tools = false;                // the reply made calls: a stop is "tool_calls"
  const nlohmann::json *logprobs = nullptr; // the tokens this chunk releases
};
// One streamed chunk: reasoning and content as delta fields when non-empty.
std::string chunk_body(const ResponseHeader &header, const ReplyParts &piece,
                       const ChunkSpec &chunk);
// The chunks of one streamed call, number `call_index` of choice `chunk.index`:
// the first carries its id, type and name with empty arguments, the next the
// arguments.
std::vector<std::string> tool_call_chunk_bodies(const ResponseHeader &header,
                                                const ParsedToolCall &call, size_t call_index,
                                                const ChunkSpec &chunk);
// The last chunk when stream_options.include_usage is set: no choices.
std::string usage_chunk_body(const ResponseHeader &header, const JobUsage &usage);
// A choice's logprobs for `entries`, in OpenAI's shape: chat {"content":
// [{token, logprob, bytes, top_logprobs}], "refusal": null}; completions
// {tokens, token_logprobs, top_logprobs, text_offset}. `offset` is the bytes
// of the reply before these tokens, and is moved past them.
nlohmann::json logprobs_json(Endpoint endpoint, const std::vector<StepLogprobs> &entries,
                             size_t &offset);
// The chunks of one streamed call, number `index` of the reply: the first
// carries its id, type and name with empty arguments, the next the arguments.
std::vector<std::string> tool_call_chunk_bodies(const ResponseHeader &header,
                                                const ParsedToolCall &call, size_t index,
                                                bool first);
// The last chunk when stream_options.include_usage is set: no choices.
std::string usage_chunk_body(const ResponseHeader &header, const JobUsage &usage);

} // namespace bonsai::server

// Fuzz target: the request bodies of `bonsai serve` (POST /v1/chat/completions
// and /v1/completions). The first byte picks the endpoint; the rest is the
// body. Every input must either parse into a request within the documented
// ranges and limits (small ones here, so that inputs reach them: nesting,
// long strings, long arrays, many fields, many or long stop strings, prompt
// bytes) or be refused with an ApiError whose status is 400 and whose
// error body is valid JSON; nothing else may escape.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/openai/openai_request.hpp"
#include "api/openai/openai_response.hpp"
#include "base/api_error.hpp"
#include "base/api_errors.hpp"
#include "fuzz_support.hpp"
#include "reply/reasoning_split.hpp"
#include "reply/tool_calls.hpp"

using bonsai::fuzz::require;

// The same bytes as a model's reply, streamed in pieces of `step` bytes,
// through the reasoning split and the tool-call split: nothing is invented,
// whatever the tags, and every call found has a name and object arguments.
void split_as_a_reply(std::string_view text, uint8_t mode) {
  bonsai::server::ReasoningSplit split(mode & 2);
  bonsai::server::ToolCallSplit tools;
  const size_t step = 1 + (mode >> 2) % 16;
  size_t out = 0;
  const auto take_calls = [&](const bonsai::server::ContentPiece &piece) {
    out += piece.content.size();
    for (const auto &call : piece.calls) {
      require(!call.name.empty(), "a call has a name");
      out += call.name.size();
    }
  };
  for (size_t at = 0; at < text.size(); at += step) {
    const auto parts = split.feed(text.substr(at, step));
    out += parts.reasoning.size();
    take_calls(tools.feed(parts.content));
  }
  const auto rest = split.finish();
  out += rest.reasoning.size();
  take_calls(tools.feed(rest.content));
  take_calls(tools.finish());
  require(out <= text.size(), "the splits give back no more text than they were given");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  using namespace bonsai::server;
  const Endpoint endpoint = data[0] % 2 == 0 ? Endpoint::chat : Endpoint::completion;
  const std::string_view body(reinterpret_cast<const char *>(data + 1), size - 1);
  RequestContext context;
  context.model_id = "model";
  context.n_vocab = 151936;
  context.json = {8, 4096, 64, 32};
  context.max_prompt_bytes = 2048;
  context.max_stop_strings = 4;
  context.max_stop_string_bytes = 16;
  try {
    const CompletionSpec spec = parse_completion_request(endpoint, body, context);
    const bonsai::GenerateRequest &g = spec.generate;
    require(spec.model == "model", "a parsed request names the served model");
    require(g.n_predict == -1 || g.n_predict >= 1, "max_tokens is -1 (none) or >= 1");
    require(g.sampling.temperature >= 0 && g.sampling.temperature <= 2, "temperature in [0, 2]");
    require(g.sampling.top_p >= 0 && g.sampling.top_p <= 1, "top_p in [0, 1]");
    require(g.sampling.top_k >= 0, "top_k >= 0");
    require(g.sampling.min_p >= 0 && g.sampling.min_p <= 1, "min_p in [0, 1]");
    require(g.stop_strings.size() <= 4, "at most max_stop_strings stop strings");
    for (const auto &stop : g.stop_strings)
      require(!stop.empty() && stop.size() <= 16, "no empty or overlong stop string");
    size_t prompt_bytes = g.prompt.size();
    for (const auto &message : g.messages)
      prompt_bytes += message.content.size();
    require(prompt_bytes <= 2048, "the prompt text is within max_prompt_bytes");
    for (const int32_t id : g.prompt_tokens)
      require(id >= 0 && id < 151936, "prompt token ids are in the vocabulary");
    if (endpoint == Endpoint::chat)
      require(!g.messages.empty(), "a chat request has messages");
    else
      require(!g.prompt.empty() || !g.prompt_tokens.empty(), "a completion has a prompt");
    require(spec.stream || !spec.include_usage, "include_usage only when streaming");
    require(spec.n >= 1 && spec.n <= 16, "n in [1, 16]");
    require(g.top_logprobs >= 0 && g.top_logprobs <= 20, "top_logprobs in [0, 20]");
    require(g.logprobs || g.top_logprobs == 0, "top_logprobs only with logprobs");
    require((g.format.kind == bonsai::ReplyFormat::Kind::text) == spec.format_param.empty(),
            "a reply format names the field its errors belong to");
  } catch (const ApiError &error) {
    require(error.status == 400, "a refused request is 400");
    require(nlohmann::json::accept(error_body(error)), "the error body is JSON");
  }
  split_as_a_reply(body, data[0]);
  return 0;
}

#include "api/openai/openai_request.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/api_error.hpp"
#include "request/chat_request_parts.hpp"
#include "request/format_fields.hpp"
#include "request/json_limits.hpp"
#include "request/request_fields.hpp"
#include "request/tool_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// The fields each endpoint knows. Any other is ignored and named in the
// answer's Bonsai-Ignored-Fields header (field_notes.hpp): clients add
// fields with every release. Besides OpenAI's own, the extensions of
// llama-server and vLLM that bonsai honours (ignore_eos, min_tokens,
// repetition_penalty, cache_prompt: always on here, n_probs) are known.
const std::set<std::string> kCommonFields = {"model",
                                             "max_tokens",
                                             "temperature",
                                             "top_p",
                                             "top_k",
                                             "min_p",
                                             "seed",
                                             "stop",
                                             "stream",
                                             "stream_options",
                                             "presence_penalty",
                                             "frequency_penalty",
                                             "n",
                                             "user",
                                             "repeat_penalty",
                                             "logprobs",
                                             "logit_bias",
                                             "speculative.n_max",
                                             "speculative.n_min",
                                             "ignore_eos",
                                             "min_tokens",
                                             "repetition_penalty",
                                             "cache_prompt",
                                             "metadata",
                                             "store",
                                             "service_tier",
                                             "prompt_cache_key",
                                             "safety_identifier"};
const std::set<std::string> kChatFields = {"messages",
                                           "max_completion_tokens",
                                           "chat_template_kwargs",
                                           "enable_thinking",
                                           "top_logprobs",
                                           "tools",
                                           "tool_choice",
                                           "response_format",
                                           "reasoning_format",
                                           "parallel_tool_calls",
                                           "reasoning_budget",
                                           "reasoning_effort",
                                           "modalities"};
// parse_special is bonsai's own: whether control-token text in the prompt
// becomes control tokens (default true, as llama.cpp's /completion does).
const std::set<std::string> kCompletionFields = {"prompt",  "echo",          "suffix",
                                                 "best_of", "parse_special", "response_format"};

constexpr int64_t kMaxChoices = 16;

// Fields bonsai knows but cannot honour: refused unless they ask for the
// default behaviour.
void refuse_unsupported(const json &body) {
  if (integer_field(body, "best_of", 1, 1'000'000, 1) != 1)
    throw bad_request("'best_of' must be 1: bonsai returns one choice per request", "best_of");
  if (field(body, "suffix") != nullptr)
    throw bad_request("'suffix' is not supported by bonsai serve", "suffix");
  if (bool_field(body, "echo", false))
    throw bad_request("'echo' is not supported by bonsai serve", "echo");
  const json *logit_bias = field(body, "logit_bias");
  if (logit_bias != nullptr && !(logit_bias->is_object() && logit_bias->empty()))
    throw bad_request("'logit_bias' is not supported by bonsai serve", "logit_bias");
}

void note_unknown_fields(const json &body, Endpoint endpoint) {
  const auto &own = endpoint == Endpoint::chat ? kChatFields : kCompletionFields;
  for (const auto &[key, value] : body.items())
    if (!kCommonFields.contains(key) && !own.contains(key))
      note_ignored_field(key);
}

// Speculative decoding: the server's draft settings, of which a request may
// lower the most proposals per step (0: none) and raise the fewest worth a
// verified step (llama-server's field names).
DraftOptions draft_options(const json &body, const DraftOptions &server) {
  DraftOptions d = server;
  d.max = static_cast<int32_t>(integer_field(body, "speculative.n_max", 0, server.max, server.max));
  d.min = static_cast<int32_t>(integer_field(body, "speculative.n_min", 1, std::max(d.max, 1),
                                             std::min(server.min, std::max(d.max, 1))));
  return d;
}

SamplingParams sampling(const json &body) {
  SamplingParams s;
  s.temperature = static_cast<float>(number_field(body, "temperature", 0.0, 2.0, s.temperature));
  s.top_p = static_cast<float>(number_field(body, "top_p", 0.0, 1.0, s.top_p));
  s.top_k = static_cast<int32_t>(integer_field(body, "top_k", 0, 1'000'000, s.top_k));
  s.min_p = static_cast<float>(number_field(body, "min_p", 0.0, 1.0, s.min_p));
  s.presence_penalty =
      static_cast<float>(number_field(body, "presence_penalty", -2.0, 2.0, s.presence_penalty));
  s.frequency_penalty =
      static_cast<float>(number_field(body, "frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  // vLLM spells llama-server's repeat_penalty repetition_penalty.
  s.repeat_penalty = static_cast<float>(
      number_field(body, "repeat_penalty", 0.01, 10.0,
                   number_field(body, "repetition_penalty", 0.01, 10.0, s.repeat_penalty)));
  if (field(body, "seed") != nullptr)
    s.seed = static_cast<uint64_t>(
        integer_field(body, "seed", INT64_MIN, INT64_MAX, 0)); // any 64-bit value, as OpenAI
  return s;
}

// A message's content: a string, or a list of {"type": "text", "text": ...}
// parts, concatenated.
void completion_prompt(const json &body, int32_t n_vocab, GenerateRequest &request) {
  const json *prompt = field(body, "prompt");
  if (prompt == nullptr)
    throw bad_request("'prompt' is required", "prompt");
  if (prompt->is_string()) {
    request.prompt = prompt->get<std::string>();
  } else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    request.prompt = (*prompt)[0].get<std::string>();
  } else if (prompt->is_array() && !prompt->empty() &&
             std::all_of(prompt->begin(), prompt->end(),
                         [](const json &v) { return v.is_number_integer(); })) {
    const int64_t limit = n_vocab > 0 ? n_vocab : int64_t{INT32_MAX} + 1;
    for (const auto &v : *prompt) {
      // Read unsigned ids as such: a 64-bit id must not wrap to a negative one.
      const bool in_range = v.is_number_unsigned()
                                ? v.get<uint64_t>() < static_cast<uint64_t>(limit)
                                : v.get<int64_t>() >= 0 && v.get<int64_t>() < limit;
      if (!in_range)
        throw bad_request(
            n_vocab > 0
                ? fmt::format("'prompt' holds the token id {}, outside the vocabulary of {} "
                              "tokens",
                              v.dump(), n_vocab)
                : fmt::format("'prompt' holds the token id {}, out of range", v.dump()),
            "prompt");
      request.prompt_tokens.push_back(static_cast<int32_t>(v.get<int64_t>()));
    }
  } else {
    throw bad_request("'prompt' must be a string, a list of one string, or a list of token ids "
                      "(one prompt per request)",
                      "prompt");
  }
  if (request.prompt.empty() && request.prompt_tokens.empty())
    throw bad_request("'prompt' is empty", "prompt");
}

} // namespace

CompletionSpec parse_completion_request(Endpoint endpoint, std::string_view body_text,
                                        const RequestContext &context) {
  const std::string &model_id = context.model_id;
  const json body = parse_json_within(body_text, context.json);
  if (!body.is_object())
    throw bad_request("The request body must be a JSON object");
  note_unknown_fields(body, endpoint);
  refuse_unsupported(body);

  CompletionSpec spec;
  spec.endpoint = endpoint;
  spec.prompt_param = endpoint == Endpoint::chat ? "messages" : "prompt";
  // One model is served, so any name asks for it (llama-server's habit: SDK
  // examples name models by habit); replies name the one served.
  string_field(body, "model"); // checked for its type
  spec.model = model_id;
  string_field(body, "user"); // checked for its type, otherwise unused

  GenerateRequest &g = spec.generate;
  g.sampling = sampling(body);
  g.stop_strings = stop_list(field(body, "stop"), "stop", context);
  spec.stream = bool_field(body, "stream", false);
  // n choices run as n sequences (each its own seed when one is given).
  spec.n = static_cast<int32_t>(integer_field(body, "n", 1, kMaxChoices, 1));
  if (const json *options = field(body, "stream_options"); options != nullptr) {
    if (!options->is_object())
      throw bad_request("'stream_options' must be an object", "stream_options");
    ignore_unknown_fields(*options, {"include_usage", "continuous_usage_stats"}, "stream_options");
    if (!spec.stream)
      throw bad_request("'stream_options' is only allowed with 'stream': true", "stream_options");
    spec.include_usage = bool_field(*options, "include_usage", false);
  }

  constexpr int64_t kMaxTokens = 1'000'000'000;
  if (endpoint == Endpoint::chat) {
    g.messages = chat_messages(body);
    g.enable_thinking = thinking(body);
    // OpenAI's reasoning_effort: "none" and "minimal" turn thinking off.
    if (const std::string effort = string_field(body, "reasoning_effort");
        effort == "none" || effort == "minimal")
      g.enable_thinking = false;
    ToolsRequest tools = tools_request(body);
    g.tools = std::move(tools.rendered);
    spec.parse_tool_calls = tools.parse_calls;
    spec.parallel_tool_calls = tools.parallel;
    spec.reasoning_format = reasoning_format(body, context.reasoning_format);
    // logprobs: true, and top_logprobs 0..20 alternatives (OpenAI's chat shape).
    g.logprobs = bool_field(body, "logprobs", false);
    g.top_logprobs = static_cast<int32_t>(integer_field(body, "top_logprobs", 0, 20, 0));
    if (g.top_logprobs > 0 && !g.logprobs)
      throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    g.reasoning_budget = static_cast<int32_t>(
        integer_field(body, "reasoning_budget", -1, 1'000'000'000, context.reasoning_budget));
    // Without a limit a reply runs to a stop token or the end of the context.
    const int64_t legacy = integer_field(body, "max_tokens", 1, kMaxTokens, -1);
    g.n_predict =
        static_cast<int32_t>(integer_field(body, "max_completion_tokens", 1, kMaxTokens, legacy));
  } else {
    completion_prompt(body, context.n_vocab, g);
    g.parse_special = bool_field(body, "parse_special", true);
    // logprobs: N (0..5), the chosen token's log probability and N
    // alternatives (OpenAI's legacy shape); true counts as 0.
    if (const json *logprobs = field(body, "logprobs");
        logprobs != nullptr && logprobs->is_boolean()) {
      g.logprobs = logprobs->get<bool>();
    } else if (logprobs != nullptr) {
      g.top_logprobs = static_cast<int32_t>(integer_field(body, "logprobs", 0, 5, 0));
      g.logprobs = true;
    }
    g.n_predict = static_cast<int32_t>(integer_field(body, "max_tokens", 1, kMaxTokens, 16));
  }
  // Constrained decoding; the schemas are read again with their keys in
  // the client's order, which the reply follows.
  std::optional<nlohmann::ordered_json> ordered;
  if (wants_format(body))
    ordered = parse_ordered_json_within(body_text, context.json);
  FormatRequest format =
      format_request(body, ordered ? &*ordered : nullptr, spec.parallel_tool_calls);
  g.format = std::move(format.format);
  spec.format_param = std::move(format.param);
  if (!g.stop_strings.empty() && g.format.kind != ReplyFormat::Kind::text)
    throw bad_request(
        fmt::format("'stop' cannot be used with {}: a stop string could cut the "
                    "reply before it is complete",
                    spec.format_param == "tools" ? "a required tool call" : "'response_format'"),
        "stop");
  g.draft = draft_options(body, context.draft);
  // ignore_eos: the reply runs to max_tokens (or the context's end), as
  // benchmarks ask; min_tokens: the end-of-turn tokens are held back until
  // that many tokens are out.
  if (bool_field(body, "ignore_eos", false))
    g.stop_tokens = std::vector<int32_t>{};
  g.min_tokens = static_cast<int32_t>(integer_field(body, "min_tokens", 0, kMaxTokens, 0));
  if (g.min_tokens > 0) { // a proposal could end the reply early: no drafts for it
    g.draft.ngram = 0;
    g.draft.max = 0;
  }
  bool_field(body, "cache_prompt", true); // checked for its type: the cache is always on
  check_prompt_bytes(g, context, spec.prompt_param);
  return spec;
}

} // namespace bonsai::server

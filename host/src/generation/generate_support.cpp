#include "generation/generate_support.hpp"

#include <random>

#include <fmt/format.h>

namespace bonsai::host {

std::vector<int32_t> request_prompt(const Engine::Impl &engine, const GenerateRequest &request) {
  if (!request.prompt_tokens.empty())
    return request.prompt_tokens;
  ChatOptions chat;
  chat.enable_thinking = request.enable_thinking;
  chat.tools = request.tools;
  try {
    // Chat content is plain text: only the template's markers become
    // control tokens, so a message cannot forge a turn.
    if (!request.messages.empty())
      return engine.tokenize_chat(request.messages, chat);
    if (request.chat) {
      std::vector<ChatMessage> messages;
      if (!request.system_prompt.empty())
        messages.push_back({"system", request.system_prompt});
      messages.push_back({"user", request.prompt});
      return engine.tokenize_chat(messages, chat);
    }
    return engine.tokenizer.encode(request.prompt, request.parse_special);
  } catch (const Error &error) {
    throw InvalidArgument(fmt::format("generate: {}", error.what()));
  }
}

SamplerParams sampler_params(const SamplingParams &sampling) {
  SamplerParams params;
  params.temperature = sampling.temperature;
  params.top_k = sampling.top_k;
  params.top_p = sampling.top_p;
  params.min_p = sampling.min_p;
  params.repeat_penalty = sampling.repeat_penalty;
  params.repeat_last_n = sampling.repeat_last_n;
  params.presence_penalty = sampling.presence_penalty;
  params.frequency_penalty = sampling.frequency_penalty;
  params.seed = sampling.seed ? *sampling.seed : std::random_device{}();
  try {
    params.validate();
  } catch (const Error &error) {
    throw InvalidArgument(fmt::format("generate: {}", error.what()));
  }
  return params;
}

void check_generation_limits(const GenerateRequest &request) {
  if (request.n_predict < -1)
    throw InvalidArgument(fmt::format("generate: n_predict must be >= 0 or -1 (no limit), got {}",
                                      request.n_predict));
  if (request.reasoning_budget < -1)
    throw InvalidArgument(
        fmt::format("generate: reasoning_budget must be >= 0 or -1 (no limit), got {}",
                    request.reasoning_budget));
  for (const auto &stop : request.stop_strings)
    if (stop.empty())
      throw InvalidArgument("generate: a stop string is empty");
  // A stop string would cut the value (or the reasoning before it) short,
  // and a constrained reply promises a whole value.
  if (!request.stop_strings.empty() && request.format.kind != ReplyFormat::Kind::text)
    throw InvalidArgument("generate: stop strings cannot be used with a reply format: one could "
                          "cut the value before it is complete");
  if (request.min_tokens < 0)
    throw InvalidArgument(
        fmt::format("generate: min_tokens must be >= 0, got {}", request.min_tokens));
  const DraftOptions &draft = request.draft;
  if (request.min_tokens > 0 && (draft.ngram > 0 || draft.model != nullptr || draft.mtp))
    throw InvalidArgument("generate: min_tokens cannot be used with a draft yet (a proposal could "
                          "end the reply early)");
  if (request.top_logprobs < 0 || request.top_logprobs > 20)
    throw InvalidArgument(
        fmt::format("generate: top_logprobs must be 0..20, got {}", request.top_logprobs));
}

ThinkTags::ThinkTags(const Tokenizer &tokenizer) {
  const std::vector<int32_t> open_ids = tokenizer.encode("<think>", true);
  const std::vector<int32_t> close_ids = tokenizer.encode("</think>", true);
  if (open_ids.size() == 1 && close_ids.size() == 1) {
    open = open_ids[0];
    close = close_ids[0];
  }
}

bool ThinkTags::ends_open(std::span<const int32_t> tokens) const {
  if (!known())
    return false;
  for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
    if (*it == close)
      return false;
    if (*it == open)
      return true;
  }
  return false;
}

ThinkBudget::ThinkBudget(const ThinkTags &tags, int32_t budget, std::span<const int32_t> prompt) {
  if (budget < 0 || !tags.known())
    return;
  budget_ = budget;
  open_ = tags.open;
  close_ = tags.close;
  inside_ = tags.ends_open(prompt); // a block the prompt opened starts its budget now
}

void ThinkBudget::accept(int32_t token) {
  if (budget_ < 0)
    return;
  if (token == open_) {
    inside_ = true;
    count_ = 0;
  } else if (token == close_) {
    inside_ = false;
  } else if (inside_) {
    ++count_;
  }
}

std::string TextStream::push(int32_t token, bool &stopped) {
  if (token >= tokenizer_->n_vocab())
    return {};
  auto result = filter_.push(decoder_.push(token));
  stopped = result.stopped;
  return std::move(result.released);
}

std::string TextStream::finish(bool &stopped) {
  auto result = filter_.push(decoder_.flush());
  stopped = result.stopped;
  return result.released + filter_.finish();
}

} // namespace bonsai::host

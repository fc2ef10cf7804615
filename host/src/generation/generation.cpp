#include "bonsai/generation.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "generation/constrained_choice.hpp"
#include "generation/draft_policy.hpp"
#include "generation/generate_support.hpp"
#include "generation/ngram_draft.hpp"
#include "generation/token_picker.hpp"

namespace bonsai {

struct Generation::Impl {
  std::shared_ptr<const Engine::Impl> engine;
  std::vector<int32_t> prompt;
  int32_t n_predict = 0;
  bool logprobs = false;
  std::vector<int32_t> stop_tokens;
  std::optional<Sampler> sampler; // empty: greedy argmax without penalties
  host::TextStream stream;
  host::ThinkTags think_tags;
  bool prompt_opens_reasoning;
  host::ThinkBudget think_budget;
  host::ConstrainedChoice constrained;
  host::TokenPicker picker; // over think_budget and constrained
  int32_t token_room = -1;  // set_token_room(); -1: not set
  int32_t generated = 0;
  bool done = false;
  DraftOptions draft;
  host::DraftPolicy policy;
  int32_t drafted = 0, accepted = 0;

  Impl(std::shared_ptr<const Engine::Impl> engine_impl, const GenerateRequest &request)
      : engine(std::move(engine_impl)), prompt(host::request_prompt(*engine, request)),
        n_predict(request.n_predict), logprobs(request.logprobs),
        stop_tokens(request.stop_tokens ? *request.stop_tokens : engine->tokenizer.stop_ids()),
        stream(engine->tokenizer, request.stop_strings), think_tags(engine->tokenizer),
        prompt_opens_reasoning(think_tags.ends_open(prompt)),
        think_budget(think_tags, request.reasoning_budget, prompt),
        constrained(*engine, request, prompt, stop_tokens),
        picker(constrained, think_budget, request, engine->tokenizer), draft(request.draft),
        policy(request.draft) {}

  void check_step(std::span<const float> logits) const {
    if (done)
      throw InvalidArgument("Generation::next: the generation has ended");
    if (logits.size() != static_cast<size_t>(engine->n_vocab()))
      throw InvalidArgument(fmt::format("Generation::next: {} logits for a vocabulary of {}",
                                        logits.size(), engine->n_vocab()));
  }
  // The step for `raw`, the choice from `logits` before the reply takes it.
  GenerationStep take(int32_t raw, std::span<const float> logits);
  // A plain step's choice from `logits`: the format's, else the sampler's
  // (argmax without one).
  int32_t draw(std::span<const float> logits) {
    return picker.choose(logits, sampler ? &*sampler : nullptr, budget(), generated);
  }

  // Tokens the reply may still take, this step's included (-1: no limit).
  int32_t budget() const {
    return host::tighter_budget(n_predict < 0 ? -1 : n_predict - generated,
                                token_room < 0 ? -1 : token_room - generated);
  }
};

Generation::Generation(const Engine &engine, const GenerateRequest &request)
    : impl_(std::make_unique<Impl>(engine.impl(), request)) {
  if (impl_->prompt.empty())
    throw InvalidArgument("generate: the prompt is empty");
  impl_->engine->check_tokens(impl_->prompt, "generate: prompt");
  host::check_generation_limits(request);
  const SamplerParams params = host::sampler_params(request.sampling);
  if (!request.sampling.is_greedy()) {
    impl_->sampler.emplace(params);
    for (const int32_t token : impl_->prompt)
      impl_->sampler->accept(token);
  }
  impl_->done = request.n_predict == 0;
}

Generation::Generation(Generation &&) noexcept = default;
Generation &Generation::operator=(Generation &&) noexcept = default;
Generation::~Generation() = default;

const std::vector<int32_t> &Generation::prompt() const {
  return impl_->prompt;
}

GenerationStep Generation::Impl::take(int32_t raw, std::span<const float> logits) {
  GenerationStep step;
  Sampler *sampler_ptr = sampler ? &*sampler : nullptr;
  step.token = picker.take(raw);
  const bool ends =
      std::find(stop_tokens.begin(), stop_tokens.end(), step.token) != stop_tokens.end();
  if (logprobs && !ends)
    step.logprobs = picker.logprobs(step.token, logits, sampler_ptr);
  bool string_stopped = false;
  if (ends) {
    step.stop = StopReason::stop_token;
  } else {
    ++generated;
    step.text = stream.push(step.token, string_stopped);
    if (string_stopped)
      step.stop = StopReason::stop_string;
    else if (n_predict >= 0 && generated >= n_predict)
      step.stop = StopReason::length;
    else if (sampler)
      sampler->accept(step.token);
  }
  if (step.stop && *step.stop != StopReason::stop_string) {
    step.text += stream.finish(string_stopped);
    if (string_stopped)
      step.stop = StopReason::stop_string;
  }
  if (step.stop == StopReason::stop_string)
    step.stop_string = stream.matched_stop();
  done = step.stop.has_value();
  return step;
}

GenerationStep Generation::next(std::span<const float> logits) {
  Impl &g = *impl_;
  g.check_step(logits);
  return g.take(g.draw(logits), logits);
}

GenerationStep Generation::next(std::span<const float> logits, int32_t proposed) {
  Impl &g = *impl_;
  g.check_step(logits);
  if (proposed < 0 || proposed >= g.engine->n_vocab())
    throw InvalidArgument(
        fmt::format("Generation::next: proposed token {} is out of range", proposed));
  // Under a reply format the step draws as next(logits) does, and the
  // proposal is kept where the draw equals it: for a proposal made for sure
  // that is the speculative rule itself (kept with the probability the
  // format's draw gives it, else a draw from the rest).
  const int32_t raw = g.constrained.active() ? g.draw(logits)
                      : g.sampler            ? g.sampler->sample_against(logits, proposed)
                                             : argmax(logits);
  return g.take(raw, logits);
}

std::vector<int32_t> Generation::lookup_draft(std::span<const int32_t> context) const {
  if (impl_->draft.ngram <= 0)
    return {};
  return host::ngram_draft(context, impl_->draft.ngram, impl_->draft.max);
}

int32_t Generation::draft_length(int32_t offered, int32_t room) {
  Impl &g = *impl_;
  if (g.done)
    return 0;
  int32_t most = std::min(offered, room);
  // The fed token's successor is the step's own; proposals come after it.
  if (const int32_t left = g.budget(); left >= 0)
    most = std::min(most, left - 1);
  return most <= 0 ? 0 : g.policy.length(most);
}

void Generation::record_empty_draft(double ms) {
  impl_->policy.nothing_proposed(ms);
}

void Generation::record_step(int32_t verified, int32_t kept, double ms) {
  Impl &g = *impl_;
  if (verified <= 0) {
    g.policy.plain_step(ms);
    return;
  }
  g.drafted += verified;
  g.accepted += kept;
  g.policy.verify_step(verified, kept, ms);
}

int32_t Generation::drafted_tokens() const {
  return impl_->drafted;
}

int32_t Generation::accepted_tokens() const {
  return impl_->accepted;
}

std::string Generation::finish() {
  if (impl_->done)
    return {};
  impl_->done = true;
  bool string_stopped = false;
  return impl_->stream.finish(string_stopped);
}

void Generation::set_token_room(int32_t room) {
  if (room < 0)
    throw InvalidArgument("Generation::set_token_room: the room must not be negative");
  impl_->token_room = impl_->generated + room;
}

GenerateStats Generation::constraint_stats() const {
  GenerateStats stats;
  impl_->constrained.add_to(stats);
  return stats;
}

bool Generation::prompt_opens_reasoning() const {
  return impl_->prompt_opens_reasoning;
}

int32_t Generation::generated() const {
  return impl_->generated;
}

bool Generation::done() const {
  return impl_->done;
}

} // namespace bonsai

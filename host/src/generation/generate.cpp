// Session::generate: prompt preparation, prefix reuse, the sampling loop,
// streaming with stop strings, and statistics.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "bonsai/core/sampling.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "generation/constrained_choice.hpp"
#include "generation/draft_policy.hpp"
#include "generation/generate_support.hpp"
#include "generation/model_draft.hpp"
#include "generation/mtp_draft.hpp"
#include "generation/ngram_draft.hpp"
#include "generation/token_picker.hpp"
#include "model/session_impl.hpp"

namespace bonsai {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double per_second(int32_t count, double ms) {
  return ms > 0 ? count * 1000.0 / ms : 0.0;
}

} // namespace

std::string_view to_string(StopReason reason) {
  switch (reason) {
  case StopReason::length:
    return "length";
  case StopReason::stop_token:
    return "stop token";
  case StopReason::stop_string:
    return "stop string";
  case StopReason::cancelled:
    return "cancelled";
  case StopReason::context_full:
    return "context full";
  }
  return "unknown";
}

GenerateResult Session::generate(const GenerateRequest &request, const TextCallback &on_text) {
  struct CancelConsumer {
    std::atomic<bool> &flag;
    ~CancelConsumer() { flag.store(false); }
  } consume{impl_->cancel_requested};
  Impl &s = *impl_;
  const Engine::Impl &engine = *s.engine;

  // ---- validate everything before touching the session ----
  const std::vector<int32_t> prompt = host::request_prompt(engine, request);
  if (prompt.empty() && !(request.continue_session && s.pending))
    throw InvalidArgument("generate: the prompt is empty");
  engine.check_tokens(prompt, "generate: prompt");
  host::check_generation_limits(request);
  const bool drafting =
      request.draft.ngram > 0 || request.draft.model != nullptr || request.draft.mtp;
  if (request.draft.model == this)
    throw InvalidArgument("generate: the draft model's session is this session");
  if (request.draft.model != nullptr && request.draft.mtp)
    throw InvalidArgument(
        "generate: a draft model and the MTP draft exclude each other; choose one");
  if (request.draft.ngram < 0 || request.draft.max < 1 || request.draft.min < 1 ||
      request.draft.min > request.draft.max)
    throw InvalidArgument(fmt::format(
        "generate: the draft needs ngram >= 0 and 1 <= min <= max, got ngram {}, min {}, max {}",
        request.draft.ngram, request.draft.min, request.draft.max));
  // Greedy steps take the argmax on the device (no logits copied back);
  // with a draft, its plain steps too: only a verify step needs rows.
  const bool device_greedy = request.sampling.is_greedy() && !request.logprobs &&
                             request.format.kind == ReplyFormat::Kind::text &&
                             request.min_tokens == 0;
  const SamplerParams chosen_sampling = host::sampler_params(request.sampling);
  const std::vector<int32_t> stop_tokens =
      request.stop_tokens ? *request.stop_tokens : engine.tokenizer.stop_ids();

  host::ConstrainedChoice constrained(engine, request, prompt, stop_tokens);
  // The MTP layer goes up with the first request that drafts with it.
  std::optional<host::MtpDraft> mtp_draft;
  if (request.draft.mtp)
    mtp_draft.emplace(s.attach_mtp("generate"), s.n_ctx(), request, constrained.active());

  // What stays in the KV cache and what must be evaluated.
  int32_t keep = 0;
  std::vector<int32_t> to_eval;
  if (request.continue_session) {
    keep = static_cast<int32_t>(s.history.size());
    if (s.pending)
      to_eval.push_back(*s.pending);
    to_eval.insert(to_eval.end(), prompt.begin(), prompt.end());
  } else {
    const auto mismatch =
        std::mismatch(s.history.begin(), s.history.end(), prompt.begin(), prompt.end());
    // Re-evaluate at least the last prompt token: its logits are needed.
    keep = static_cast<int32_t>(
        std::min<size_t>(mismatch.first - s.history.begin(), prompt.size() - 1));
    to_eval.assign(prompt.begin() + keep, prompt.end());
  }
  if (keep + static_cast<int64_t>(to_eval.size()) > s.n_ctx())
    throw ContextFullError(fmt::format(
        "generate: the prompt of {} tokens{} does not fit the context window of {} tokens",
        to_eval.size(), keep > 0 ? fmt::format(" after {} cached", keep) : std::string(),
        s.n_ctx()));
  if (request.n_predict > 0 &&
      keep + static_cast<int64_t>(to_eval.size()) + request.n_predict > s.n_ctx())
    throw ContextFullError(fmt::format(
        "generate: {} prompt tokens{} + n_predict {} exceed the context window of {} tokens",
        to_eval.size(), keep > 0 ? fmt::format(" after {} cached", keep) : std::string(),
        request.n_predict, s.n_ctx()));

  // ---- prompt ----
  GenerateResult result;
  result.stats.load_ms = engine.load_ms + s.upload_ms;
  result.stats.reused_tokens = keep;
  s.truncate_to(keep);

  std::optional<Sampler> sampler; // picks from logits: every step, or a draft's verify steps
  if (!device_greedy || drafting) {
    sampler.emplace(chosen_sampling);
    for (int32_t token : s.history)
      sampler->accept(token);
    for (int32_t token : to_eval)
      sampler->accept(token);
  }
  const auto prompt_start = Clock::now();
  int32_t next = -1;
  const bool prompt_done =
      device_greedy ? s.run_tokens(to_eval, Impl::Want::last_argmax, nullptr, &next)
                    : s.run_tokens(to_eval, Impl::Want::last_logits, &s.scratch_logits, nullptr);
  const auto prompt_end = Clock::now();
  result.stats.prompt_tokens = static_cast<int32_t>(to_eval.size());
  result.stats.prompt_ms = ms_between(prompt_start, prompt_end);
  result.stats.prompt_tps = per_second(result.stats.prompt_tokens, result.stats.prompt_ms);
  if (!prompt_done) {
    result.stop_reason = StopReason::cancelled;
    return result;
  }

  // ---- generation loop ----
  host::TextStream stream(engine.tokenizer, request.stop_strings);
  bool callback_stopped = false;
  auto release = [&](const std::string &text) {
    if (text.empty())
      return;
    result.text += text;
    if (on_text && !callback_stopped && !on_text(text))
      callback_stopped = true;
  };

  host::ThinkBudget think_budget(host::ThinkTags(engine.tokenizer), request.reasoning_budget,
                                 s.history); // the prompt is in it now
  host::TokenPicker picker(constrained, think_budget, request, engine.tokenizer);
  std::optional<StopReason> stop;
  if (request.n_predict == 0)
    stop = StopReason::length;

  // Takes one chosen token into the reply; the reason to stop, if any.
  // `logits`: its step's (for its log probability).
  auto emit = [&](int32_t token, std::span<const float> logits) -> std::optional<StopReason> {
    ++result.stats.gen_tokens;
    if (std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end()) {
      s.pending = token; // the turn's end belongs in the history of a chat
      return StopReason::stop_token;
    }
    result.tokens.push_back(token);
    if (request.logprobs) {
      StepLogprobs lp = picker.logprobs(token, logits, &*sampler);
      result.logprobs.push_back(lp.chosen.logprob);
      if (request.top_logprobs > 0)
        result.top_logprobs.push_back(std::move(lp.top));
    }
    bool string_stopped = false;
    release(stream.push(token, string_stopped));
    s.pending = token;
    if (string_stopped)
      return StopReason::stop_string;
    if (callback_stopped || s.cancel_requested.load())
      return StopReason::cancelled;
    if (request.n_predict >= 0 && static_cast<int32_t>(result.tokens.size()) >= request.n_predict)
      return StopReason::length;
    if (static_cast<int32_t>(s.history.size()) + 1 > s.n_ctx())
      return StopReason::context_full;
    return std::nullopt;
  };

  // Tokens the reply may still take, the next one included, when that one
  // goes to position `at` of the cache (-1: no limit).
  auto reply_budget = [&](int64_t at) {
    const auto made = static_cast<int32_t>(result.tokens.size());
    return host::tighter_budget(request.n_predict < 0 ? -1 : request.n_predict - made,
                                static_cast<int32_t>(s.n_ctx() - at));
  };

  host::DraftPolicy policy(request.draft);
  std::optional<host::ModelDraft> model_draft;
  if (request.draft.model != nullptr)
    model_draft.emplace(*request.draft.model->impl_, request, engine.n_vocab(),
                        constrained.active());
  host::DraftProposal proposal;
  std::vector<float> rows; // a verified draft's logits, one row per token
  // A token already chosen, not in the cache yet; -1: none. (Not an
  // std::optional: GCC's -O1 TSan build warns that it may be read
  // uninitialized, a false positive that -Werror makes fatal.)
  int32_t chosen = -1;
  while (!stop) {
    if (chosen >= 0) {
      next = chosen;
      chosen = -1;
    } else {
      if (!device_greedy) // the device took the argmax already
        next = picker.choose(s.scratch_logits, &*sampler,
                             reply_budget(static_cast<int64_t>(s.history.size())),
                             static_cast<int32_t>(result.tokens.size()));
      next = picker.take(next);
      if ((stop = emit(next, s.scratch_logits)))
        break;
    }
    if (sampler)
      sampler->accept(next);

    // The draft: as many tokens as the reply and the context can still take.
    const auto step_start = Clock::now();
    std::vector<int32_t> draft;
    proposal.q.clear();
    proposal.catch_up_ms = 0;
    if (drafting) {
      std::vector<int32_t> context = s.history;
      context.push_back(next);
      int32_t room = static_cast<int32_t>(s.n_ctx() - static_cast<int64_t>(s.history.size())) - 2;
      if (request.n_predict >= 0)
        room = std::min(room, request.n_predict - static_cast<int32_t>(result.tokens.size()) - 1);
      if (request.draft.ngram > 0) {
        draft = host::ngram_draft(context, request.draft.ngram, room);
        draft.resize(static_cast<size_t>(policy.length(static_cast<int32_t>(draft.size()))));
      }
      if (draft.empty() && (model_draft || mtp_draft)) {
        const int32_t asked = policy.length(room);
        if (mtp_draft) {
          mtp_draft->propose(context, asked, proposal);
        } else if (!model_draft->propose(context, asked, proposal)) {
          s.pending = next;
          stop = StopReason::cancelled;
          break;
        }
        draft = proposal.tokens;
        // A draft that proposed nothing still cost its steps: the policy
        // counts it as a proposal refused.
        if (draft.empty() && asked > 0)
          policy.nothing_proposed(ms_between(step_start, Clock::now()));
      }
    }
    const int32_t before = static_cast<int32_t>(s.history.size());
    if (draft.empty()) {
      const auto plain_start = Clock::now(); // a draft's ask is not the plain step's cost
      const int32_t one[1] = {next};
      const bool stepped =
          device_greedy ? s.run_tokens(one, Impl::Want::last_argmax, nullptr, &next)
                        : s.run_tokens(one, Impl::Want::last_logits, &s.scratch_logits, nullptr);
      if (!stepped) {
        s.pending = one[0];
        stop = StopReason::cancelled;
      } else {
        ++result.stats.gen_steps;
        policy.plain_step(ms_between(plain_start, Clock::now()));
      }
      continue;
    }

    // Verify: the token plus the draft in one step, a row of logits each.
    std::vector<int32_t> batch = {next};
    batch.insert(batch.end(), draft.begin(), draft.end());
    if (!s.run_tokens(batch, Impl::Want::all_logits, &rows, nullptr)) {
      s.truncate_to(before);
      s.pending = next;
      stop = StopReason::cancelled;
      break;
    }
    ++result.stats.gen_steps;
    const double verify_ms = ms_between(step_start, Clock::now());
    result.stats.drafted_tokens += static_cast<int32_t>(draft.size());
    const auto n_vocab = static_cast<size_t>(engine.n_vocab());
    int32_t kept = 0;
    for (size_t i = 0; i <= draft.size(); ++i) {
      const std::span<const float> row(rows.data() + i * n_vocab, n_vocab);
      const bool proposed = i < draft.size();
      // The row after the last proposal, and every row under a format, take
      // a plain step's draw; a proposal is kept where it equals the draw.
      // Under a format every proposal is made for sure (the draft model
      // proposes its best tokens), and for those this is the speculative
      // rule: kept with the probability the draw gives it.
      const bool plain_draw = !proposed || constrained.active();
      const int32_t budget = reply_budget(before + 1 + static_cast<int64_t>(i));
      int32_t token = plain_draw           ? picker.choose(row, &*sampler, budget,
                                                           static_cast<int32_t>(result.tokens.size()))
                      : proposal.q.empty() ? sampler->sample_against(row, draft[i])
                                           : sampler->sample_against(row, draft[i], proposal.q[i]);
      token = picker.take(token);
      const bool in_cache = proposed && token == draft[i];
      stop = emit(token, row);
      if (in_cache) {
        ++kept;
        s.pending.reset(); // evaluated with the draft
      }
      if (stop || !in_cache) {
        // The cache keeps the step's token and the drafts kept; a token
        // chosen here is fed next (or left pending: truncate_to drops the
        // pending token, which a reply that ends here must keep).
        const std::optional<int32_t> pending = s.pending;
        s.truncate_to(before + 1 + kept);
        s.pending = pending;
        if (!stop)
          chosen = token;
        break;
      }
      sampler->accept(token);
    }
    result.stats.accepted_tokens += kept;
    policy.verify_step(static_cast<int32_t>(draft.size()), kept, verify_ms, proposal.catch_up_ms);
  }
  if (*stop != StopReason::stop_string) {
    bool string_stopped = false;
    release(stream.finish(string_stopped));
    if (string_stopped)
      stop = StopReason::stop_string;
  }
  const auto gen_end = Clock::now();
  result.stop_reason = *stop;
  constrained.add_to(result.stats);
  result.stats.gen_ms = ms_between(prompt_end, gen_end);
  // With a draft a step yields several tokens: count tokens after the first
  // (what steps count without one).
  result.stats.gen_tps =
      per_second(drafting ? std::max(0, result.stats.gen_tokens - 1) : result.stats.gen_steps,
                 result.stats.gen_ms);
  return result;
}

} // namespace bonsai

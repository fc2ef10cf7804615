#pragma once
// Token choice and text for one sequence whose model steps the caller runs
// itself, typically in a bonsai::Batch: the prompt of a GenerateRequest,
// sampling with penalties, stop tokens, stop strings and UTF-8 assembly,
// exactly as Session::generate does them.
//
//   bonsai::Generation gen(engine, request);
//   logits = <run gen.prompt()>;
//   for (;;) {
//     bonsai::GenerationStep step = gen.next(logits);
//     show(step.text);
//     if (step.stop) break;
//     logits = <run {step.token}>;
//   }
//
// A Generation is used by one thread at a time.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"

namespace bonsai {

struct GenerationStep {
  int32_t token = -1; // the chosen id (a stop token when stop == stop_token)
  // Text released by this step: complete UTF-8, never part of a stop string.
  // When the step ends the generation it includes whatever was held back.
  std::string text;
  // Set when the generation ended at this step: stop_token (the token is not
  // part of the output), stop_string, or length (n_predict tokens). Then the
  // token need not be fed to the model.
  std::optional<StopReason> stop;
  // With stop == stop_string: the stop string that completed (the request's
  // text of it; neither it nor what followed is in `text`).
  std::string stop_string;
  // With GenerateRequest::logprobs, for a token that is part of the output.
  std::optional<StepLogprobs> logprobs;
};

class BONSAI_HOST_API Generation {
public:
  // Tokenizes the request's prompt and checks it as Session::generate does
  // (InvalidArgument for an empty prompt, ids out of range, bad sampling,
  // n_predict < -1, an empty stop string; FormatError for a format that
  // cannot be followed). continue_session is not used; n_predict -1 means no limit
  // (the caller watches the context).
  Generation(const Engine &engine, const GenerateRequest &request);
  Generation(Generation &&) noexcept;
  Generation &operator=(Generation &&) noexcept;
  ~Generation();

  // The prompt's token ids (at least one).
  const std::vector<int32_t> &prompt() const;
  // Chooses the next token from the logits (n_vocab floats) that follow the
  // last token run: the prompt's last token, then each step's token.
  // InvalidArgument when called after a step that stopped, or for a row of
  // the wrong size.
  GenerationStep next(std::span<const float> logits);
  // Speculative decoding for a caller that verifies drafted tokens in its
  // own steps (GenerateRequest::draft: ngram, max, min, adaptive; `model` is
  // not used here, the caller drafts with its own model):
  //
  //   draft = gen.lookup_draft(context) or the caller's draft model's tokens;
  //   draft.resize(gen.draft_length(draft.size(), room));
  //   rows = <run {token} + draft, a row of logits after each>;
  //   for i in 0..: step = i < draft.size() ? gen.next(rows[i], draft[i])
  //                                         : gen.next(rows[i]);
  //     stop at step.stop, or where step.token != draft[i] (the cache then
  //     keeps the token fed and the proposals before i; step.token is next);
  //   gen.record_step(draft.size(), kept, ms);
  //
  // Prompt lookup (draft.ngram > 0): the tokens that followed the most recent
  // earlier occurrence of the last draft.ngram tokens of `context` (the
  // sequence's tokens and the one about to be fed), up to draft.max; empty
  // otherwise.
  std::vector<int32_t> lookup_draft(std::span<const int32_t> context) const;
  // How many of `offered` proposals to verify in the next step: at most
  // draft.max, what the reply may still take after the fed token, and
  // `room` (positions the caller's context has left after it); then what the
  // draft policy expects to pay (adaptive), 0 meaning a plain step. Fewer
  // than draft.min: 0.
  int32_t draft_length(int32_t offered, int32_t room);
  // How the step went: `verified` proposals (0: a plain step), `kept` of
  // them kept, `ms` milliseconds; the policy learns from it.
  void record_step(int32_t verified, int32_t kept, double ms);
  // The caller's draft model was asked for proposals and made none (its best
  // token below its p_min), in `ms`: counted as a proposal refused, so that
  // a draft that never proposes is asked less and less often.
  void record_empty_draft(double ms);
  // next() for the row that follows the token fed before `proposed`: the
  // speculative sampling rule (keep `proposed` with probability min(1, p),
  // else draw from the rest), so the choice is distributed exactly as
  // next(logits)'s; greedy: the argmax. The proposal was kept when the
  // step's token equals it. With a reply format the step draws as
  // next(logits) does and keeps the proposal where the draw equals it (for a
  // proposal made for sure, the same rule). InvalidArgument for a token out
  // of the vocabulary.
  GenerationStep next(std::span<const float> logits, int32_t proposed);
  // Drafted and kept proposals so far (record_step's sums).
  int32_t drafted_tokens() const;
  int32_t accepted_tokens() const;

  // Ends the generation early (cancelled, or the caller's context is full):
  // the text still held back, which is not a stop string. Further next()
  // calls throw.
  std::string finish();
  // The most tokens the reply can still hold, from now on (the caller's
  // context room). Constrained decoding (GenerateRequest::format) then
  // finishes the reply within it. InvalidArgument when negative.
  void set_token_room(int32_t room);
  // GenerateStats' constrained_tokens, constraint_masks and constraint_ms so
  // far (the other fields are 0).
  GenerateStats constraint_stats() const;
  // Whether the prompt ends inside a <think> block (a template that prefills
  // it): the reply then starts as reasoning.
  bool prompt_opens_reasoning() const;
  // Tokens chosen so far that are part of the output (a stop token is not).
  int32_t generated() const;
  bool done() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace bonsai

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

#pragma once
// What Session::generate and bonsai::Generation share: the prompt of a
// request, its sampler parameters, and the text stream (UTF-8 assembly, then
// stop strings) that turns chosen tokens into released text.
#include <span>
#include <string>
#include <vector>

#include "bonsai/core/sampling.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "generation/stop_string_filter.hpp"
#include "model/engine_impl.hpp"

namespace bonsai::host {

// The request's prompt as token ids (prompt_tokens, messages or prompt, in
// that order). Throws InvalidArgument when the text cannot be formatted or
// tokenized.
std::vector<int32_t> request_prompt(const Engine::Impl &engine, const GenerateRequest &request);

// The core sampler's parameters, validated; a random seed when none is set.
// Throws InvalidArgument.
SamplerParams sampler_params(const SamplingParams &sampling);

// Throws InvalidArgument for what Session::generate and Generation refuse in
// every request: n_predict below -1, an empty stop string.
void check_generation_limits(const GenerateRequest &request);

// The ids of <think> and </think>, when the vocabulary has each as one token.
struct ThinkTags {
  explicit ThinkTags(const Tokenizer &tokenizer);
  bool known() const { return open >= 0 && close >= 0; }
  // Whether `tokens` end inside a think block (a template that prefills
  // <think>): the last think tag among them opens one.
  bool ends_open(std::span<const int32_t> tokens) const;

  int32_t open = -1, close = -1;
};

// GenerateRequest::reasoning_budget: once a think block holds that many
// tokens, the next token is </think> whatever the model would choose. The
// block may be opened by the prompt or by the reply. A vocabulary without
// think tokens, or a budget of -1, changes nothing.
class ThinkBudget {
public:
  ThinkBudget(const ThinkTags &tags, int32_t budget, std::span<const int32_t> prompt);
  // The token to take instead of `chosen`.
  int32_t choose(int32_t chosen) const {
    return budget_ >= 0 && inside_ && count_ >= budget_ ? close_ : chosen;
  }
  // Follows the block with each token taken.
  void accept(int32_t token);

private:
  int32_t budget_ = -1;
  int32_t open_ = -1, close_ = -1; // the <think> and </think> ids
  bool inside_ = false;
  int32_t count_ = 0; // tokens inside the open block
};

// Turns accepted tokens into released text: UTF-8 assembly (core's stream
// decoder), then the stop-string filter. Ids past the tokenizer's vocabulary
// (padding rows of the embedding) decode to nothing.
class TextStream {
public:
  TextStream(const Tokenizer &tokenizer, std::vector<std::string> stop_strings)
      : tokenizer_(&tokenizer), decoder_(tokenizer), filter_(std::move(stop_strings)) {}

  // Released text for one token; sets `stopped` when a stop string completed.
  std::string push(int32_t token, bool &stopped);
  // End of generation: what the decoder and the filter still hold.
  std::string finish(bool &stopped);
  // Once `stopped` was set: the stop string that completed.
  const std::string &matched_stop() const { return filter_.matched(); }

private:
  const Tokenizer *tokenizer_;
  StreamDecoder decoder_;
  StopStringFilter filter_;
};

} // namespace bonsai::host

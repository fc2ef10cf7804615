#pragma once
// One choice of a completion (`n` choices run as `n` jobs): its job's events
// become reasoning, content, tool calls and logprobs, streamed as chunks or
// collected for a whole reply.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai/openai_response.hpp"
#include "reply/reply_split.hpp"
#include "schedule/job.hpp"

namespace bonsai::server {

class ChoiceAssembly {
public:
  ChoiceAssembly(const CompletionSpec &spec, const ResponseHeader &header, int32_t index);

  // Streaming: the chunk bodies this event adds, in order (a finished choice
  // ends with its finish_reason chunk).
  std::vector<std::string> stream(JobEvent &event);
  // Whole reply: takes the event in.
  void collect(JobEvent &event);
  // The whole reply's choice, once the final event is in.
  nlohmann::json choice(Finish finish);

private:
  void take_logprobs(JobEvent &event);
  std::optional<nlohmann::json> pending_logprobs();

  const CompletionSpec &spec_;
  const ResponseHeader &header_;
  const int32_t index_;
  bool first_chunk_ = true;
  ReplySplit split_;                   // reasoning, content and tool calls
  ReplyParts reply_;                   // a whole reply, collected
  std::vector<ParsedToolCall> calls_;  // its calls
  size_t streamed_calls_ = 0;          // calls streamed so far (the next one's index)
  std::vector<StepLogprobs> logprobs_; // tokens whose logprobs are not sent yet
  size_t logprob_offset_ = 0;          // bytes of the reply before them (completions)
};

} // namespace bonsai::server

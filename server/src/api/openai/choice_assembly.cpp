#include "api/openai/choice_assembly.hpp"

namespace bonsai::server {

using json = nlohmann::json;

ChoiceAssembly::ChoiceAssembly(const CompletionSpec &spec, const ResponseHeader &header,
                               int32_t index)
    : spec_(spec), header_(header), index_(index), split_(spec) {}

std::vector<std::string> ChoiceAssembly::stream(JobEvent &event) {
  std::vector<std::string> out;
  const ReplyPiece piece = split_.next(event);
  take_logprobs(event);
  const auto chunk = [&](const ReplyParts &parts, std::optional<Finish> finish, bool called) {
    const std::optional<json> lp = pending_logprobs();
    out.push_back(
        chunk_body(header_, parts, {index_, finish, first_chunk_, called, lp ? &*lp : nullptr}));
    first_chunk_ = false;
  };
  if (piece.calls.empty()) {
    if (!piece.parts.empty() || event.finish)
      chunk(piece.parts, event.finish, streamed_calls_ > 0);
    return out;
  }
  if (!piece.parts.empty())
    chunk(piece.parts, std::nullopt, false);
  for (const ParsedToolCall &call : piece.calls) {
    for (std::string &body : tool_call_chunk_bodies(header_, call, streamed_calls_++,
                                                    {index_, std::nullopt, first_chunk_}))
      out.push_back(std::move(body));
    first_chunk_ = false;
  }
  if (event.finish)
    chunk({}, event.finish, true);
  return out;
}

void ChoiceAssembly::collect(JobEvent &event) {
  ReplyPiece piece = split_.next(event);
  take_logprobs(event);
  reply_.reasoning += piece.parts.reasoning;
  reply_.content += piece.parts.content;
  for (ParsedToolCall &call : piece.calls)
    calls_.push_back(std::move(call));
}

json ChoiceAssembly::choice(Finish finish) {
  trim_reasoning(reply_.reasoning);
  const std::optional<json> lp = pending_logprobs();
  return choice_json(header_, index_, reply_, calls_, finish, lp ? &*lp : nullptr);
}

// With logprobs: the event's tokens wait until a chunk (or the reply)
// carries them.
void ChoiceAssembly::take_logprobs(JobEvent &event) {
  for (StepLogprobs &entry : event.logprobs)
    logprobs_.push_back(std::move(entry));
}

// The waiting tokens' logprobs, now sent (nullopt without logprobs; an empty
// list when none waits).
std::optional<json> ChoiceAssembly::pending_logprobs() {
  if (!spec_.generate.logprobs)
    return std::nullopt;
  json out = logprobs_json(spec_.endpoint, logprobs_, logprob_offset_);
  logprobs_.clear();
  return out;
}

} // namespace bonsai::server

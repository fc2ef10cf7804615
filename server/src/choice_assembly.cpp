#include "choice_assembly.hpp"

#include <algorithm>

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// A whole reply's reasoning without the blank lines around it.
void trim_reasoning(std::string &text) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!text.empty() && space(text.back()))
    text.pop_back();
  const auto first = std::find_if_not(text.begin(), text.end(), space);
  text.erase(text.begin(), first);
}

} // namespace

ChoiceAssembly::ChoiceAssembly(const CompletionSpec &spec, const ResponseHeader &header,
                               int32_t index)
    : spec_(spec), header_(header), index_(index) {
  if (spec.endpoint == Endpoint::chat && spec.reasoning_format != ReasoningFormat::none)
    split_.emplace(spec.reasoning_open);
  if (spec.parse_tool_calls)
    tools_.emplace();
}

std::vector<std::string> ChoiceAssembly::stream(JobEvent &event) {
  std::vector<std::string> out;
  const Piece piece = next_piece(event);
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
  Piece piece = next_piece(event);
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

// The event's text as reasoning, content and tool calls.
ChoiceAssembly::Piece ChoiceAssembly::next_piece(const JobEvent &event) {
  Piece piece{split(event), {}};
  if (!tools_)
    return piece;
  ContentPiece found = tools_->feed(piece.parts.content);
  if (event.finish) {
    ContentPiece rest = tools_->finish();
    found.content += rest.content;
    for (ParsedToolCall &call : rest.calls)
      found.calls.push_back(std::move(call));
  }
  piece.parts.content = std::move(found.content);
  for (ParsedToolCall &call : found.calls)
    if (spec_.parallel_tool_calls || kept_calls_++ == 0) // false: the first call only
      piece.calls.push_back(std::move(call));
  return piece;
}

// The event's text as reasoning and content (all content without a split).
ReplyParts ChoiceAssembly::split(const JobEvent &event) {
  if (!split_)
    return {{}, event.text};
  ReplyParts parts = split_->feed(event.text);
  if (event.finish) {
    const ReplyParts rest = split_->finish();
    parts.reasoning += rest.reasoning;
    parts.content += rest.content;
  }
  return parts;
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

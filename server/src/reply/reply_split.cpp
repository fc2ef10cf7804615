#include "reply/reply_split.hpp"

#include <algorithm>

namespace bonsai::server {

ReplySplit::ReplySplit(const CompletionSpec &spec) : parallel_calls_(spec.parallel_tool_calls) {
  if (spec.endpoint == Endpoint::chat && spec.reasoning_format != ReasoningFormat::none)
    reasoning_.emplace(spec.reasoning_open);
  if (spec.parse_tool_calls)
    tools_.emplace();
}

ReplyPiece ReplySplit::next(const JobEvent &event) {
  ReplyPiece piece{split(event), {}};
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
    if (parallel_calls_ || kept_calls_++ == 0) // false: the first call only
      piece.calls.push_back(std::move(call));
  return piece;
}

// The event's text as reasoning and content (all content without a split).
ReplyParts ReplySplit::split(const JobEvent &event) {
  if (!reasoning_)
    return {{}, event.text};
  ReplyParts parts = reasoning_->feed(event.text);
  if (event.finish) {
    const ReplyParts rest = reasoning_->finish();
    parts.reasoning += rest.reasoning;
    parts.content += rest.content;
  }
  return parts;
}

void trim_reasoning(std::string &text) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!text.empty() && space(text.back()))
    text.pop_back();
  const auto first = std::find_if_not(text.begin(), text.end(), space);
  text.erase(text.begin(), first);
}

} // namespace bonsai::server

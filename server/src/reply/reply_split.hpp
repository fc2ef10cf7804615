#pragma once
// A chat reply, as its job's events arrive, told apart into reasoning (the
// <think> block), content and tool calls: what every API's writer builds its
// reply from (Chat Completions, Responses, Messages, Ollama).
#include <optional>
#include <string>
#include <vector>

#include "reply/reasoning_split.hpp"
#include "reply/tool_calls.hpp"
#include "schedule/job.hpp"

namespace bonsai::server {

struct ReplyPiece {
  ReplyParts parts;                  // reasoning, then content
  std::vector<ParsedToolCall> calls; // after the content
  bool empty() const { return parts.empty() && calls.empty(); }
};

class ReplySplit {
public:
  // Reasoning is split for a chat unless its format is none; tool calls are
  // parsed when the spec asks for them (parallel_tool_calls false keeps the
  // first).
  explicit ReplySplit(const CompletionSpec &spec);
  // The event's text told apart; the last event brings what was held back.
  ReplyPiece next(const JobEvent &event);

private:
  ReplyParts split(const JobEvent &event);

  bool parallel_calls_;
  std::optional<ReasoningSplit> reasoning_;
  std::optional<ToolCallSplit> tools_;
  size_t kept_calls_ = 0;
};

// A whole reply's reasoning without the blank lines around it.
void trim_reasoning(std::string &text);

} // namespace bonsai::server

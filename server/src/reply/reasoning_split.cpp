#include "reply/reasoning_split.hpp"

#include <algorithm>

#include "reply/tag_scan.hpp"

namespace bonsai::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
// A tool call ends the reasoning of a model that plans its call there and
// never closes the block; the call itself is content.
constexpr std::string_view kToolCall = "<tool_call>";

} // namespace

ReasoningSplit::ReasoningSplit(bool open)
    : state_(open ? State::reasoning : State::start), skip_space_(open) {}

ReplyParts ReasoningSplit::feed(std::string_view text) {
  held_.append(text);
  ReplyParts out;
  run(out, false);
  return out;
}

ReplyParts ReasoningSplit::finish() {
  ReplyParts out;
  run(out, true);
  return out;
}

void ReasoningSplit::run(ReplyParts &out, bool at_end) {
  for (;;) {
    if (skip_space_) {
      const auto first =
          std::find_if(held_.begin(), held_.end(), [](char c) { return !is_space(c); });
      held_.erase(held_.begin(), first);
      if (held_.empty())
        return;
      skip_space_ = false;
    }
    switch (state_) {
    case State::start: {
      const auto first =
          std::find_if(held_.begin(), held_.end(), [](char c) { return !is_space(c); });
      const std::string_view rest(held_.data() + (first - held_.begin()),
                                  static_cast<size_t>(held_.end() - first));
      if (rest.substr(0, kOpen.size()) == kOpen) {
        held_.erase(0, static_cast<size_t>(first - held_.begin()) + kOpen.size());
        state_ = State::reasoning;
        skip_space_ = true;
        continue;
      }
      if (!at_end && kOpen.substr(0, rest.size()) == rest)
        return; // whitespace and perhaps the start of <think>: wait
      state_ = State::content;
      continue;
    }
    case State::reasoning: {
      const size_t close = held_.find(kClose);
      const size_t call = held_.find(kToolCall);
      if (close != std::string::npos && (call == std::string::npos || close < call)) {
        out.reasoning.append(held_, 0, close);
        held_.erase(0, close + kClose.size());
        state_ = State::content;
        skip_space_ = true;
        continue;
      }
      if (call != std::string::npos) {
        out.reasoning.append(held_, 0, call);
        held_.erase(0, call); // the call stays: it is content
        state_ = State::content;
        continue;
      }
      const size_t keep = at_end ? 0
                                 : std::max(partial_tag_at_end(held_, kClose),
                                            partial_tag_at_end(held_, kToolCall));
      out.reasoning.append(held_, 0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    case State::content:
      out.content += held_;
      held_.clear();
      return;
    }
  }
}

} // namespace bonsai::server

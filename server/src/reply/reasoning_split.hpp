#pragma once
// Splits a chat reply, as it streams, into its reasoning (a <think> ... </think>
// block at the start of the reply) and its content, for `reasoning_content`
// (docs/server.md, "Reasoning"). A tag may arrive cut across pieces: the
// splitter holds back text that may still become one.
#include <string>
#include <string_view>

namespace bonsai::server {

struct ReplyParts {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningSplit {
public:
  // `open`: the prompt already opened the think block (a template that
  // prefills "<think>"), so the reply starts as reasoning.
  explicit ReasoningSplit(bool open);

  // The parts of `text` that can be told apart now.
  ReplyParts feed(std::string_view text);
  // Whatever was held back, when the reply has ended.
  ReplyParts finish();

private:
  enum class State {
    start,     // nothing but whitespace yet: a <think> may still open the reply
    reasoning, // inside the think block
    content    // after it (or there was none)
  };
  void run(ReplyParts &out, bool at_end);

  State state_;
  std::string held_;        // unread text: may be the start of a tag
  bool skip_space_ = false; // drop whitespace right after <think> or </think>
};

} // namespace bonsai::server

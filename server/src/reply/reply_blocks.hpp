#pragma once
// A reply as an ordered list of blocks, the way Anthropic's Messages API
// (content blocks) and OpenAI's Responses API (output items) give it:
// reasoning, text, and one block per tool call, in the order they arrive.
// Streamed, a block opens when its first text arrives, grows by deltas and
// closes when another begins or the reply ends; a call's block opens,
// carries its arguments in one delta and closes at once.
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "reply/reply_split.hpp"

namespace bonsai::server {

struct ReplyBlock {
  enum class Kind { reasoning, text, tool_call };
  Kind kind = Kind::text;
  std::string text;    // reasoning or text so far
  ParsedToolCall call; // Kind::tool_call
};

struct BlockEvent {
  enum class What { open, delta, close };
  What what = What::open;
  size_t index = 0;                 // the block's place in the reply
  const ReplyBlock *block{nullptr}; // as it stands after this event
  std::string delta;                // What::delta: new text, or a call's arguments
};

class ReplyBlocks {
public:
  // `with_reasoning` false: reasoning is dropped (hidden), never a block.
  explicit ReplyBlocks(bool with_reasoning) : with_reasoning_(with_reasoning) {}

  // What the piece does to the blocks, in order; `last`: the reply ends
  // with it, and the block still open is closed.
  std::vector<BlockEvent> feed(const ReplyPiece &piece, bool last);

  // Every block so far, in order (stable addresses).
  const std::deque<ReplyBlock> &blocks() const { return blocks_; }
  bool has_calls() const { return calls_ > 0; }

private:
  void append(ReplyBlock::Kind kind, const std::string &text, std::vector<BlockEvent> &out);
  void close_open(std::vector<BlockEvent> &out);

  const bool with_reasoning_;
  std::deque<ReplyBlock> blocks_;
  bool open_ = false; // the last block is open
  size_t calls_ = 0;
};

} // namespace bonsai::server

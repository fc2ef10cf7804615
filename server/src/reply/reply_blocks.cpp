#include "reply/reply_blocks.hpp"

namespace bonsai::server {

std::vector<BlockEvent> ReplyBlocks::feed(const ReplyPiece &piece, bool last) {
  std::vector<BlockEvent> out;
  if (with_reasoning_)
    append(ReplyBlock::Kind::reasoning, piece.parts.reasoning, out);
  append(ReplyBlock::Kind::text, piece.parts.content, out);
  for (const ParsedToolCall &call : piece.calls) {
    close_open(out);
    ReplyBlock &block = blocks_.emplace_back();
    block.kind = ReplyBlock::Kind::tool_call;
    block.call = call;
    const size_t index = blocks_.size() - 1;
    out.push_back({BlockEvent::What::open, index, &block, {}});
    out.push_back({BlockEvent::What::delta, index, &block, call.arguments});
    out.push_back({BlockEvent::What::close, index, &block, {}});
    ++calls_;
  }
  if (last)
    close_open(out);
  return out;
}

void ReplyBlocks::append(ReplyBlock::Kind kind, const std::string &text,
                         std::vector<BlockEvent> &out) {
  if (text.empty())
    return;
  if (!open_ || blocks_.back().kind != kind) {
    close_open(out);
    ReplyBlock &block = blocks_.emplace_back();
    block.kind = kind;
    open_ = true;
    out.push_back({BlockEvent::What::open, blocks_.size() - 1, &block, {}});
  }
  ReplyBlock &block = blocks_.back();
  block.text += text;
  out.push_back({BlockEvent::What::delta, blocks_.size() - 1, &block, text});
}

void ReplyBlocks::close_open(std::vector<BlockEvent> &out) {
  if (!open_)
    return;
  open_ = false;
  out.push_back({BlockEvent::What::close, blocks_.size() - 1, &blocks_.back(), {}});
}

} // namespace bonsai::server

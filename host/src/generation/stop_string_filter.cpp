#include "generation/stop_string_filter.hpp"

#include <algorithm>
#include <deque>

namespace bonsai::host {

StopStringMatcher::StopStringMatcher(const std::vector<std::string> &strings) : nodes_(1) {
  for (const auto &string : strings)
    if (!string.empty())
      insert(string);
  link_failures();
}

void StopStringMatcher::insert(const std::string &string) {
  uint32_t state = kStart;
  for (const char c : string) {
    const auto byte = static_cast<unsigned char>(c);
    const uint32_t existing = child(state, byte);
    state = existing != kStart ? existing : add_child(state, byte);
  }
  nodes_[state].longest_match = nodes_[state].depth;
}

uint32_t StopStringMatcher::add_child(uint32_t state, unsigned char byte) {
  const auto added = static_cast<uint32_t>(nodes_.size());
  Node node;
  node.depth = nodes_[state].depth + 1;
  auto &children = nodes_[state].children;
  children.insert(std::lower_bound(children.begin(), children.end(),
                                   std::pair<unsigned char, uint32_t>{byte, 0}),
                  {byte, added});
  nodes_.push_back(std::move(node)); // last: it may move nodes_[state]
  return added;
}

void StopStringMatcher::link_failures() {
  // Breadth first: a node's failure state is shallower, so already linked.
  // The start's children fail to the start (their default).
  std::deque<uint32_t> queue;
  for (const auto &[byte, state] : nodes_[kStart].children)
    queue.push_back(state);
  while (!queue.empty()) {
    const uint32_t parent = queue.front();
    queue.pop_front();
    for (const auto &[byte, state] : nodes_[parent].children) {
      Node &node = nodes_[state];
      node.fail = next(nodes_[parent].fail, byte);
      if (node.longest_match == 0)
        node.longest_match = nodes_[node.fail].longest_match;
      queue.push_back(state);
    }
  }
}

uint32_t StopStringMatcher::child(uint32_t state, unsigned char byte) const {
  const auto &children = nodes_[state].children;
  const auto at = std::lower_bound(children.begin(), children.end(),
                                   std::pair<unsigned char, uint32_t>{byte, 0});
  return at != children.end() && at->first == byte ? at->second : kStart;
}

uint32_t StopStringMatcher::next(uint32_t state, unsigned char byte) const {
  for (;;) {
    if (const uint32_t to = child(state, byte); to != kStart)
      return to;
    if (state == kStart)
      return kStart;
    state = nodes_[state].fail;
  }
}

StopStringFilter::StopStringFilter(std::vector<std::string> stop_strings)
    : matcher_(stop_strings) {}

StopStringFilter::Result StopStringFilter::push(std::string_view piece) {
  Result result;
  if (stopped_)
    return {{}, true};
  // Every stop string that completes in `piece` starts inside held_ + piece
  // (held_ is the longest suffix that could still begin one); the one that
  // starts first wins.
  const size_t before = held_.size();
  held_.append(piece);
  size_t first_stop = std::string::npos;
  size_t first_length = 0;
  for (size_t i = 0; i < piece.size(); ++i) {
    state_ = matcher_.next(state_, static_cast<unsigned char>(piece[i]));
    const size_t length = matcher_.longest_match(state_);
    if (length > 0 && before + i + 1 - length < first_stop) {
      first_stop = before + i + 1 - length;
      first_length = length;
    }
  }
  if (first_stop != std::string::npos) {
    result.released = held_.substr(0, first_stop);
    matched_ = held_.substr(first_stop, first_length);
    result.stopped = true;
    stopped_ = true;
    held_.clear();
    return result;
  }
  const size_t keep = matcher_.depth(state_);
  result.released = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopStringFilter::finish() {
  std::string rest;
  rest.swap(held_);
  return stopped_ ? std::string() : rest;
}

} // namespace bonsai::host

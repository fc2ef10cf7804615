#pragma once
// Streams generated text while watching for stop strings: text that could be
// the start of a stop string is held back until it is decided, and a stop
// string (with anything after it) is never released.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bonsai::host {

// Aho-Corasick automaton over a set of byte strings. A state stands for the
// longest suffix of the bytes fed so far that is a prefix of one of them.
// Empty strings are ignored.
class StopStringMatcher {
public:
  explicit StopStringMatcher(const std::vector<std::string> &strings);

  static constexpr uint32_t kStart = 0; // nothing matched
  // The state after `byte`; amortized O(1) over a stream of bytes.
  uint32_t next(uint32_t state, unsigned char byte) const;
  // Length of the prefix the state stands for.
  size_t depth(uint32_t state) const { return nodes_[state].depth; }
  // Length of the longest string that ends where the state stands, 0 if none.
  size_t longest_match(uint32_t state) const { return nodes_[state].longest_match; }

private:
  struct Node {
    std::vector<std::pair<unsigned char, uint32_t>> children; // sorted by byte
    uint32_t fail = kStart;                                   // state of the longest proper suffix
    uint32_t depth = 0;
    uint32_t longest_match = 0;
  };
  void insert(const std::string &string);
  // A new trie node under `state`; returns it.
  uint32_t add_child(uint32_t state, unsigned char byte);
  void link_failures();
  // The trie child of `state` for `byte`, or kStart when there is none.
  uint32_t child(uint32_t state, unsigned char byte) const;

  std::vector<Node> nodes_;
};

class StopStringFilter {
public:
  explicit StopStringFilter(std::vector<std::string> stop_strings);

  struct Result {
    std::string released; // text safe to show now (may be empty)
    bool stopped = false; // a stop string completed; nothing more is released
  };
  // Adds the next piece of text (complete UTF-8). Costs O(piece + longest
  // stop string), whatever was pushed before. Of the stop strings that
  // complete in this piece, the one starting first cuts the text.
  Result push(std::string_view piece);
  // At the end of generation: whatever is still held back (it is not a stop
  // string, since none completed).
  std::string finish();
  // Once a push stopped: the stop string that cut the text.
  const std::string &matched() const { return matched_; }

private:
  StopStringMatcher matcher_;
  // The matcher's state after all the text so far; held_ is the last
  // depth(state_) bytes of it, the only ones a stop string may still start in.
  uint32_t state_ = StopStringMatcher::kStart;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

} // namespace bonsai::host

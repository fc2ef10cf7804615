#pragma once
// The matcher's state: a set of stacks (one per way the text so far can be
// read; alternatives fork them), each a path of frames from the root to the
// terminal reading the next byte.
#include <cstdint>
#include <vector>

#include "bonsai/core/grammar.hpp"
#include "grammar_nodes.hpp"

namespace bonsai::constrain {

struct Frame {
  int32_t node = -1;
  int32_t pos = 0;   // seq: next kid; repeat: items begun; object: next member
  int32_t aux = 0;   // repeat: separator begun; object: members begun
  int32_t extra = 0; // object: additional members begun
  uint64_t mask = 0; // distinct repeat: choices taken; object: members begun (the first 64)
  bool operator==(const Frame &) const = default;
};

// Progress of the terminal on top of a stack.
struct Lexer {
  int32_t count = 0;     // literal, until: bytes matched; ws: bytes; number: digits of the part
  int32_t chars = 0;     // string, number with an automaton: characters read
  uint8_t phase = 0;     // string: 0 before '"', 1 content, 2 after '\\'; number: see matcher
  uint8_t utf8_left = 0; // string: continuation bytes still due
  uint8_t lead = 0;      // string: lead byte of the character being read
  uint32_t cp = 0;       // string: code point being assembled
  int32_t key_lo = 0, key_hi = 0; // string: range of `excluded` still equal to the text
  int32_t key_depth = 0;          // bytes matched against that range; -1: none equal
  NfaSet nfa;                     // string or number with an automaton
  bool operator==(const Lexer &) const = default;
};

struct Stack {
  std::vector<Frame> frames;
  Lexer lex;
  bool operator==(const Stack &) const = default;
};

} // namespace bonsai::constrain

namespace bonsai {
struct GrammarMatcher::State {
  std::vector<constrain::Stack> stacks;
  // advance()'s next set, kept for its storage; not part of the state.
  std::vector<constrain::Stack> scratch;

  State() = default;
  State(const State &other) : stacks(other.stacks) {}
  State &operator=(const State &other) {
    stacks = other.stacks;
    return *this;
  }
};
} // namespace bonsai

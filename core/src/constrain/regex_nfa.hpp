#pragma once
// A JSON Schema `pattern` as a Thompson NFA over code points, run by state
// sets: matching is linear in the text whatever the pattern (no
// backtracking), so a hostile pattern costs bounded time. Only the regular
// subset of ECMA-262 compiles; the rest (back-references, look-around, word
// boundaries) is refused with a message that names the construct.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::constrain {

struct CodepointRange {
  uint32_t lo = 0, hi = 0; // inclusive
};

struct NfaState {
  std::vector<CodepointRange> ranges; // non-empty: a code point in them moves to `next`
  int32_t next = -1;
  std::vector<int32_t> epsilon; // moves that read nothing
};

// Bit set of NFA states: the matcher's state inside a patterned string.
using NfaSet = std::vector<uint64_t>;

class RegexNfa {
public:
  // Compiles an ECMA-262 pattern with search semantics (unanchored unless it
  // starts with ^ / ends with $). Code points the JSON text cannot hold
  // unescaped (controls, '"', '\\') are left out of every class, so a match
  // never needs an escape. Throws std::invalid_argument naming the problem.
  explicit RegexNfa(std::string_view pattern, size_t max_states = 4096);

  NfaSet start() const { return start_; }
  // The set after reading `cp`, with states that cannot reach the end
  // dropped; empty when the text can no longer match.
  NfaSet step(const NfaSet &from, uint32_t cp) const;
  // Whether some code point in [lo, hi] can be read from `set` (for a
  // character whose first UTF-8 bytes are known).
  bool can_step_within(const NfaSet &set, uint32_t lo, uint32_t hi) const;
  // Fewest bytes to a match after reading some code point in [lo, hi] from
  // `set` (not counting that code point's own bytes); -1: none.
  int32_t min_bytes_after_step_within(const NfaSet &set, uint32_t lo, uint32_t hi) const;
  bool accepts(const NfaSet &set) const;
  // Fewest UTF-8 bytes that take some state of `set` to a match; -1: none.
  int32_t min_bytes_to_match(const NfaSet &set) const;

private:
  void close(NfaSet &set) const; // adds everything reachable by epsilon moves

  std::vector<NfaState> states_;
  int32_t accept_ = -1;
  NfaSet start_;
  std::vector<int32_t> distance_; // fewest bytes from each state to accept_; -1: never
};

} // namespace bonsai::constrain

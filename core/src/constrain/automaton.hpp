#pragma once
// The run-time form of a regular language: a string's pattern, format and
// length together, a property name's constraints, or the digits of a bounded
// number. Run by state sets over code points, so matching is linear in the
// text whatever the language (no backtracking). It knows, for every state and
// count of characters read, the fewest UTF-8 bytes to an accepted end, which
// the matcher's budget rule needs and which keeps it from ever entering a
// state that cannot be completed.
#include <cstdint>
#include <vector>

#include "nfa_build.hpp"

namespace bonsai::constrain {

// Bit set of automaton states: the matcher's state inside the text.
using NfaSet = std::vector<uint64_t>;

// How many characters the whole text may have.
struct LengthWindow {
  int32_t min_chars = 0;
  int32_t max_chars = -1; // -1: no limit
};

class Automaton {
public:
  // `efa` without epsilon moves (nfa_build's results). Throws
  // std::invalid_argument when the length table would pass
  // `max_table_entries`, or when nothing is accepted.
  Automaton(const Nfa &efa, LengthWindow window, size_t max_table_entries);

  const NfaSet &start() const { return start_; }
  // The set after reading `cp` with `chars_before` characters read before
  // it, with states that cannot reach an accepted end dropped; empty when
  // the text can no longer match.
  NfaSet step(const NfaSet &from, uint32_t cp, int32_t chars_before) const;
  // Fewest bytes to an accepted end after reading some code point in
  // [lo, hi] (not counting its own bytes); -1: none fits.
  int32_t min_bytes_after_step_within(const NfaSet &set, uint32_t lo, uint32_t hi,
                                      int32_t chars_before) const;
  bool accepts(const NfaSet &set, int32_t chars) const;
  // Fewest UTF-8 bytes that take some state of `set` to an accepted end;
  // -1: none.
  int32_t min_bytes_to_match(const NfaSet &set, int32_t chars) const;
  // Whether another code point may be read.
  bool can_step(const NfaSet &set, int32_t chars) const;
  // The set after `cp` without the length limits (step() applies them);
  // empty when no state reads it.
  NfaSet step_any(const NfaSet &from, uint32_t cp) const;
  size_t states() const { return states_.size(); }
  size_t table_entries() const { return table_.size(); }

private:
  // Fewest bytes from `state` to an accepted end with `chars` read; -1.
  int32_t need(size_t state, int32_t chars) const;
  void fill_table();

  std::vector<NfaNode> states_;
  NfaSet start_;
  LengthWindow window_;
  std::vector<int32_t> dist_; // fewest bytes to acceptance, at any length; -1: never
  // need() for 0..table_chars_ characters read, by state; beyond, dist_.
  int32_t table_chars_ = -1;
  std::vector<int32_t> table_;
};

} // namespace bonsai::constrain

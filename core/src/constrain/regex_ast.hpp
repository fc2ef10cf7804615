#pragma once
// Regular languages over code points as syntax trees: what the pattern
// parser produces and what the format and number builders put together.
// nfa_build.hpp turns a tree into automaton states.
#include <cstdint>
#include <string_view>
#include <vector>

namespace bonsai::constrain {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

struct CodepointRange {
  uint32_t lo = 0, hi = 0; // inclusive
  bool operator==(const CodepointRange &) const = default;
};
using Ranges = std::vector<CodepointRange>;

// Sorted, merged ranges.
Ranges normalize(Ranges r);
// The code points not in `sorted` (normalized ranges).
Ranges complement(const Ranges &sorted);
Ranges intersect(const Ranges &a, const Ranges &b);
bool in_ranges(const Ranges &ranges, uint32_t cp);
int utf8_length(uint32_t cp);

struct RegexAst {
  enum class Kind : uint8_t {
    chars,     // one code point in `ranges`
    concat,    // `kids` in order
    alt,       // one of `kids`
    repeat,    // kids[0], `min`..`max` times (max -1: unbounded)
    lookahead, // reads nothing: the rest of the text must (`negated`: must not) start with a
               // match of kids[0], or be one whole when `to_end`
  };
  Kind kind = Kind::concat;
  Ranges ranges;
  std::vector<RegexAst> kids;
  int32_t min = 0, max = 0;
  bool negated = false;
  bool to_end = false;
};

// A character class; code points a JSON string cannot hold unescaped
// (controls, '"', '\\') and surrogates are left out, so that a match never
// needs an escape.
RegexAst chars_of(Ranges r);
// The ASCII text itself.
RegexAst text_of(std::string_view ascii);
RegexAst concat_of(std::vector<RegexAst> kids);
RegexAst alt_of(std::vector<RegexAst> kids);
RegexAst repeat_of(RegexAst kid, int32_t min, int32_t max);
// Any text a JSON string holds without escapes.
RegexAst any_text();

} // namespace bonsai::constrain

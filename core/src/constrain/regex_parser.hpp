#pragma once
// An ECMA-262 pattern, as JSON Schema's `pattern` uses it (the u flag,
// search semantics), read into the language of the strings it matches.
// Only the regular subset compiles: back-references, look-behind, word
// boundaries and Unicode property classes are refused with a message that
// names the construct.
#include <string_view>

#include "regex_ast.hpp"

namespace bonsai::constrain {

struct ParsedPattern {
  RegexAst ast;
  // A length the pattern asks for with a leading look-ahead such as zod's
  // `^(?=.{1,253}\.?$)`: counted apart, since intersecting the counting
  // with the rest would multiply the automaton's states.
  int32_t min_chars = 0, max_chars = -1;
};

// The strings `pattern` matches somewhere: unanchored sides match any text.
// `^` and `$` may stand at the ends of the pattern or of a top-level
// alternative; look-aheads may stand anywhere outside an unbounded
// repetition (a `$` may end them). Throws std::invalid_argument
// ("pattern: ...").
ParsedPattern parse_pattern(std::string_view pattern);

} // namespace bonsai::constrain

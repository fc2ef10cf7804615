#pragma once
// Automata over code points under construction: Thompson's construction
// from a syntax tree (look-aheads included), and the operations that put
// languages together (intersection, complement through determinization,
// minimization). Every operation keeps to a state budget and throws
// std::invalid_argument naming `what` when it would pass it, so a hostile
// schema costs bounded time and memory.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "regex_ast.hpp"

namespace bonsai::constrain {

struct NfaMove {
  Ranges ranges; // normalized, non-empty
  int32_t next = -1;
};

struct NfaNode {
  std::vector<NfaMove> moves;
  std::vector<int32_t> epsilon; // moves that read nothing
  bool accept = false;
};

struct Nfa {
  std::vector<NfaNode> nodes;
  int32_t start = 0;
  // Whether no text is accepted (after trim: the start node alone, dead).
  bool empty() const;
};

struct StateBudget {
  size_t max_states = 4096;
  std::string what = "the pattern"; // "... needs more than N automaton states"
};

// Thompson's construction, then the moves that read nothing folded away:
// an automaton without epsilon moves, trimmed to the states that lie on
// some accepting path.
Nfa compile_language(const RegexAst &ast, const StateBudget &budget);

// The texts both accept (inputs and output without epsilon moves).
Nfa intersect(const Nfa &a, const Nfa &b, const StateBudget &budget);

// A deterministic automaton for the same language; `complete` adds a dead
// state so that every code point moves somewhere. nullopt past the budget.
std::optional<Nfa> try_determinize(const Nfa &efa, size_t max_states, bool complete);
// The texts a complete deterministic automaton does not accept.
Nfa complement(Nfa dfa);
// The smallest deterministic automaton for the language of `dfa`; nullopt
// when that would take more than `max_work` state-and-class steps (Moore's
// refinement may need as many rounds as states).
std::optional<Nfa> try_minimize(const Nfa &dfa, size_t max_work);

// Every text but the given ones (each UTF-8).
Nfa all_but(const std::vector<std::string> &texts);

// Whether the automaton (without epsilon moves) accepts `text` (UTF-8).
bool accepts_text(const Nfa &efa, std::string_view text);

} // namespace bonsai::constrain

#pragma once
// The compiled form of a Grammar: a graph of nodes that the matcher walks
// with explicit stacks. Terminals (literal, string, number, whitespace,
// until) read bytes; the rest arrange them. The graph may be recursive (a
// recursive $ref): min_bytes, a fixed point, says how short each node can be.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "automaton.hpp"

namespace bonsai::constrain {

enum class NodeKind : uint8_t {
  literal, // `text`, byte for byte
  string,  // a JSON string: `min`/`max` characters, or the language of `automaton`; not one of
           // `excluded`
  number,  // a JSON number; `integer`: no fraction or exponent; `automaton` >= 0: its text is in
           // that language (bounds, multipleOf)
  ws,      // 0..`max` bytes of JSON whitespace
  until,   // any bytes, up to and including the first `text`
  seq,     // `kids` in order
  alt,     // one of `kids`
  repeat,  // kids[0] `min`..`max` times (max -1: unbounded), kids[1] (if >= 0) between;
           // `distinct`: kids[0] is an alt whose kids each come at most once
  object,  // `members` in order, optional ones skippable, then `additional` ones, then `close`;
           // `min`..`max` members in all
};

// One property of an object: the node that reads it as the first member and
// the one that reads it after another (with the comma).
struct ObjectMember {
  int32_t first = -1;
  int32_t next = -1;
  bool required = false;
  // Members (by index, all below 64) that must be present when this one is
  // (dependentRequired, followed through).
  uint64_t needs = 0;
};

struct Node {
  NodeKind kind = NodeKind::seq;
  std::string text;
  std::vector<int32_t> kids;
  int32_t min = 0, max = -1;
  int32_t automaton = -1;
  bool integer = false;
  bool distinct = false;
  std::vector<std::string> excluded; // sorted
  std::vector<ObjectMember> members;
  ObjectMember additional; // first < 0: no additional properties
  int32_t close = -1;      // the node that ends the object
};

constexpr int32_t kUnreachable = std::numeric_limits<int32_t>::max() / 4;

struct GrammarData {
  std::vector<Node> nodes;
  std::vector<Automaton> automata;
  int32_t root = -1;
  std::vector<int32_t> min_bytes; // fewest bytes each node reads (kUnreachable: none)

  // Fills min_bytes by iterating to a fixed point (the any-JSON value and
  // recursive references refer back to themselves).
  void compute_min_bytes();
};

} // namespace bonsai::constrain

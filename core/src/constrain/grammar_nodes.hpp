#pragma once
// The compiled form of a Grammar: a graph of nodes that the matcher walks
// with explicit stacks. Terminals (literal, string, number, whitespace,
// until) read bytes; the rest arrange them.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "regex_nfa.hpp"

namespace bonsai::constrain {

enum class NodeKind : uint8_t {
  literal, // `text`, byte for byte
  string,  // a JSON string: `min`/`max` characters, `regex` pattern, not one of `excluded`
  number,  // a JSON number; `integer`: no fraction or exponent
  ws,      // 0..`max` bytes of JSON whitespace
  until,   // any bytes, up to and including the first `text`
  seq,     // `kids` in order
  alt,     // one of `kids`
  repeat,  // kids[0] `min`..`max` times (max -1: unbounded), kids[1] (if >= 0) between
  object,  // `members` in order, optional ones skippable, then `additional` ones, then `close`
};

// One property of an object: the node that reads it as the first member and
// the one that reads it after another (with the comma).
struct ObjectMember {
  int32_t first = -1;
  int32_t next = -1;
  bool required = false;
};

struct Node {
  NodeKind kind = NodeKind::seq;
  std::string text;
  std::vector<int32_t> kids;
  int32_t min = 0, max = -1;
  int32_t regex = -1;
  bool integer = false;
  std::vector<std::string> excluded; // sorted
  std::vector<ObjectMember> members;
  ObjectMember additional; // first < 0: no additional properties
  int32_t close = -1;      // the node that ends the object
};

constexpr int32_t kUnreachable = std::numeric_limits<int32_t>::max() / 4;

struct GrammarData {
  std::vector<Node> nodes;
  std::vector<RegexNfa> regexes;
  int32_t root = -1;
  std::vector<int32_t> min_bytes; // fewest bytes each node reads (kUnreachable: none)

  // Fills min_bytes by iterating to a fixed point (the any-JSON value is
  // recursive).
  void compute_min_bytes();
};

} // namespace bonsai::constrain

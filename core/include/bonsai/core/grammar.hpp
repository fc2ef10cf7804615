#pragma once
// Grammars for constrained decoding: what a reply may look like, compiled
// from a JSON Schema, "any JSON object", or a set of tools whose calls must
// follow their parameter schemas. A Grammar is immutable and cheap to copy;
// GrammarMatcher follows one reply byte by byte and TokenConstraint
// (bonsai/core/token_constraint.hpp) turns that into allowed tokens.
//
// The supported JSON Schema subset, and what every refusal says, is listed
// in docs/structured-output.md. A keyword outside the subset is refused with
// bonsai::Error naming it and where it sits, never ignored.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "bonsai/core/error.hpp"

namespace bonsai {

namespace constrain {
struct GrammarData;
}

// Limits that bound the work a hostile schema can cause.
struct GrammarLimits {
  int32_t max_depth = 32;            // nested schemas (objects, arrays, anyOf, $ref chains)
  int32_t max_nodes = 20000;         // grammar nodes in all
  int32_t max_enum = 1024;           // values in one enum
  int32_t max_properties = 256;      // properties of one object
  int32_t max_pattern_states = 4096; // automaton states of one pattern
  int32_t max_literal_bytes = 4096;  // bytes of one const/enum value or property name
};

// A tool the reply may call: its name and its parameters' JSON Schema text
// (empty: any JSON object).
struct ToolSchema {
  std::string name;
  std::string parameters;
};

class Grammar {
public:
  // A JSON value valid under `schema` (JSON text). Throws bonsai::Error.
  static Grammar json_schema(std::string_view schema, const GrammarLimits &limits = {});
  // Any JSON object.
  static Grammar json_object();
  // One or more calls in the Qwen form
  //   <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
  // (several separated by "\n" when `parallel`, at most 16), each naming one
  // of `tools` with arguments valid under its schema. Throws bonsai::Error.
  static Grammar tool_calls(std::span<const ToolSchema> tools, bool parallel,
                            const GrammarLimits &limits = {});

  // Either the calls of tool_calls() or one JSON value valid under `schema`
  // (JSON text; empty: any JSON object): what an agent that has tools and
  // must answer in a format may reply. Throws bonsai::Error.
  static Grammar tool_calls_or_value(std::span<const ToolSchema> tools, bool parallel,
                                     std::string_view schema, const GrammarLimits &limits = {});

  // This grammar preceded by a reasoning block: when `opened` the reply is
  // already inside it (the prompt ended with <think>), else the block
  // "<think>...</think>" is optional. Whitespace may follow the block.
  Grammar after_reasoning(bool opened) const;

  const constrain::GrammarData &data() const { return *data_; }

private:
  explicit Grammar(std::shared_ptr<const constrain::GrammarData> data) : data_(std::move(data)) {}
  std::shared_ptr<const constrain::GrammarData> data_;
};

// Follows a reply through a grammar, byte by byte. Copyable: the token mask
// copies it to try tokens.
class GrammarMatcher {
public:
  explicit GrammarMatcher(Grammar grammar);
  GrammarMatcher(const GrammarMatcher &);
  GrammarMatcher &operator=(const GrammarMatcher &);
  ~GrammarMatcher();

  // Takes the bytes if the grammar allows them all; otherwise returns false
  // and the matcher may be left anywhere (use a copy to try).
  bool advance(std::string_view bytes);
  // Whether the text so far is a complete reply.
  bool complete() const;
  // Whether some byte may still follow.
  bool can_continue() const;
  // The fewest bytes that complete the reply (0 when complete).
  int32_t min_bytes_to_complete() const;

  // The stacks behind the matcher (core's token masks look inside).
  struct State;
  const State &state() const { return *state_; }
  const Grammar &grammar() const { return grammar_; }

private:
  Grammar grammar_;
  std::unique_ptr<State> state_;
};

} // namespace bonsai

#pragma once
// JSON Schema -> grammar nodes. One compiler per grammar; every schema
// (`$ref` targets included) is compiled once and shared, so a schema cannot
// blow up by repetition, and a recursive reference becomes a recursive node.
//
// A value's schema is read as a conjunction of parts: the schema itself,
// its allOf branches and the targets of its `$ref`s, each keyword taken
// from all of them (the tightest bound, every pattern, the properties
// merged). anyOf and oneOf distribute over the rest.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bonsai/core/grammar.hpp"
#include "grammar_nodes.hpp"
#include "schema_analysis.hpp"

namespace bonsai::constrain {

// Whether `schema` constrains nothing: true, or an object of annotations
// (title, description, ...) and definitions only.
bool accepts_anything(const ojson &schema);

// Throws the compiler's bonsai::Error: "json_schema: WHAT (at PATH)".
[[noreturn]] void refuse(const std::string &path, const std::string &what);
// A count keyword (minItems, maxLength, ...), or `fallback` when absent.
int64_t count_field(const ojson &schema, const char *name, const std::string &path,
                    int64_t fallback);

class SchemaCompiler {
public:
  SchemaCompiler(GrammarData &grammar, const GrammarLimits &limits);

  // The node for a value valid under `schema`; `root` is the document its
  // `$ref`s point into (it must outlive the compiler). Throws bonsai::Error
  // naming the keyword and path.
  int32_t value(const ojson &schema, const ojson &root, const std::string &path, int32_t depth = 0);
  int32_t any_value();
  int32_t any_object();

  int32_t add(Node node);
  int32_t literal(std::string text);
  int32_t seq(std::vector<int32_t> kids);
  int32_t alt(std::vector<int32_t> kids);
  int32_t ws() const { return ws_; }

  // One schema of a conjunction, with where it sits.
  struct Part {
    const ojson *schema = nullptr;
    std::string path;
    uint8_t alternatives_done = 0; // bits: its anyOf (1), oneOf (2) already distributed
  };
  using Parts = std::vector<Part>;
  // A keyword's value in one part.
  struct Found {
    const ojson *value;
    std::string path;
  };

private:
  int32_t schema_value(const ojson &schema, const std::string &path, int32_t depth);
  // Adds `schema` and, through its allOf and $ref, the schemas it implies.
  void collect(const ojson &schema, const std::string &path, Parts &parts, int32_t depth);
  int32_t conjunction(Parts parts, int32_t depth);
  // The node for a value valid under all of `schemas` (none: any value).
  int32_t all_of(const std::vector<Found> &schemas, int32_t depth);
  int32_t typed(const std::string &type, const Parts &parts, int32_t depth);
  int32_t literals(const std::vector<ojson> &values, const std::string &path);
  int32_t object(const Parts &parts, int32_t depth);
  int32_t array(const Parts &parts, int32_t depth);
  int32_t string(const Parts &parts);
  int32_t number(const Parts &parts, bool integer);
  int32_t reference(const std::string &ref, const std::string &path, int32_t depth);
  // The automaton for `language`; the same `key` (what determines it) gives
  // the one added before.
  int32_t add_automaton(const std::string &key, const Nfa &language, LengthWindow window,
                        const std::string &path);

  // The language of a string under `parts` (patterns, formats, lengths),
  // without `excluded`; nullopt when it is any string (lengths aside).
  struct StringLanguage {
    bool constrained = false;
    Nfa language;
    LengthWindow window;
    std::string key; // what determines it
  };
  StringLanguage string_language(const Parts &parts, const std::vector<std::string> &excluded,
                                 const std::string &path);
  // A string node for that language.
  int32_t string_node(const Parts &parts, const std::vector<std::string> &excluded,
                      const std::string &path);

  struct Property {
    std::string name;
    int32_t value = -1;
    bool required = false;
    uint64_t needs = 0;
  };
  // What an object node holds: `properties` in order, then (additional >=
  // 0) further keys read by `key` (-1: any name not among the properties)
  // with values read by `additional`; min..max members.
  struct ObjectShape {
    std::vector<Property> properties;
    int32_t additional = -1;
    int32_t key = -1;
    int32_t min_members = 0, max_members = -1;
  };
  int32_t object_node(const ObjectShape &shape, const std::string &path);

  GrammarData &g_;
  GrammarLimits limits_;
  const ojson *root_ = nullptr;
  int32_t ws_ = -1;
  int32_t any_ = -1, any_object_ = -1;
  // Compiled schemas, by document and address.
  using SchemaKey = std::pair<const ojson *, const ojson *>;
  std::map<SchemaKey, int32_t> done_;
  struct Open {
    SchemaKey key;
    std::string path;
    int32_t containers; // containers_ when it opened
    int32_t node;       // stands for it until compiled
    bool used = false;  // a use inside itself took `node`
  };
  std::vector<Open> open_;
  // Languages already built, by what determines them: zod repeats its
  // integer bounds and formats in every field.
  std::map<std::string, StringLanguage> string_memo_;
  std::map<std::string, int32_t> automaton_memo_;
  // Automaton states and length-table entries of the whole grammar.
  size_t automaton_states_ = 0, table_entries_ = 0;
  // References whose targets collect() is taking in as parts.
  std::vector<SchemaKey> collecting_;
  // Objects and arrays being compiled around the current schema: a
  // reference back to an open one through a container reads bytes first.
  int32_t containers_ = 0;
};

} // namespace bonsai::constrain

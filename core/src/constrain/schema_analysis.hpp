#pragma once
// What a schema says without compiling it: the keywords bonsai knows, the
// JSON types a value can have, the finite set of values it allows, and
// whether the alternatives of a oneOf can never both match (different types,
// different literals, or a discriminating property).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bonsai::constrain {

using ojson = nlohmann::ordered_json;

// Keywords that only describe: they constrain nothing.
bool is_annotation(const std::string &keyword);
// Keywords the compiler handles (annotations aside).
bool is_supported(const std::string &keyword);

// Follows `$ref`s into one document (`#`, `#/$defs/...`, any JSON pointer).
class Resolver {
public:
  explicit Resolver(const ojson &root) : root_(root) {}
  const ojson &root() const { return root_; }
  // The target, or nullptr when the reference points outside or nowhere.
  const ojson *find(const std::string &ref) const;
  // `schema` with any chain of lone `$ref`s (besides annotations) followed.
  const ojson &through_refs(const ojson &schema) const;

private:
  const ojson &root_;
};

// Whether `schema` holds no keyword but annotations and definitions.
bool only_annotations(const ojson &schema);
// A lone `$ref` (with annotations and definitions), or an allOf holding
// just one: its reference.
std::optional<std::string> lone_reference(const ojson &schema);

// The JSON types a value of `schema` can have: object, array, string,
// number (integers included), boolean, null.
std::set<std::string> value_types(const ojson &schema, const Resolver &refs);

// The values `schema` allows when they are finitely many (const, enum,
// boolean, null).
std::optional<std::vector<ojson>> literal_values(const ojson &schema, const Resolver &refs);

// Why two alternatives of a oneOf can both match, or nullopt when they
// never can.
std::optional<std::string> overlap(const ojson &a, const ojson &b, const Resolver &refs);

} // namespace bonsai::constrain

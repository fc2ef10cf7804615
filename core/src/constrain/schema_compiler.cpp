// The supported JSON Schema subset: dispatch, conjunctions, alternatives,
// references and literals. The kinds of value have their own files
// (schema_objects.cpp, schema_arrays.cpp, schema_strings.cpp,
// schema_numbers.cpp). Whatever is not handled is refused by name: a schema
// is never silently weakened.
#include "schema_compiler.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

constexpr int32_t kMaxWhitespace = 20;

bool matches_type(const ojson &v, const std::string &type) {
  if (type == "object")
    return v.is_object();
  if (type == "array")
    return v.is_array();
  if (type == "string")
    return v.is_string();
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (type == "number")
    return v.is_number();
  if (type == "boolean")
    return v.is_boolean();
  return v.is_null();
}

// The types two lists share; an integer is a number.
std::vector<std::string> shared_types(const std::vector<std::string> &a,
                                      const std::vector<std::string> &b) {
  auto has = [](const std::vector<std::string> &list, const std::string &t) {
    return std::find(list.begin(), list.end(), t) != list.end();
  };
  std::vector<std::string> out;
  for (const std::string &t : a) {
    std::string kept;
    if (has(b, t))
      kept = t;
    else if ((t == "integer" && has(b, "number")) || (t == "number" && has(b, "integer")))
      kept = "integer";
    if (!kept.empty() && !has(out, kept))
      out.push_back(kept);
  }
  return out;
}

const uint8_t kAnyOfDone = 1, kOneOfDone = 2;

// Whether a part constrains nothing more than what collect() took from it.
bool part_is_free(const SchemaCompiler::Part &part) {
  return std::all_of(part.schema->items().begin(), part.schema->items().end(),
                     [&](const auto &item) {
                       const std::string &k = item.key();
                       return is_annotation(k) || k == "$ref" || k == "allOf" ||
                              (k == "anyOf" && (part.alternatives_done & kAnyOfDone)) ||
                              (k == "oneOf" && (part.alternatives_done & kOneOfDone));
                     });
}

bool parts_have(const SchemaCompiler::Parts &parts, std::initializer_list<const char *> keys) {
  for (const auto &part : parts)
    for (const char *k : keys)
      if (part.schema->contains(k))
        return true;
  return false;
}

} // namespace

[[noreturn]] void refuse(const std::string &path, const std::string &what) {
  throw Error(fmt::format("json_schema: {} (at {})", what, path));
}

int64_t count_field(const ojson &schema, const char *name, const std::string &path,
                    int64_t fallback) {
  const auto it = schema.find(name);
  if (it == schema.end())
    return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    refuse(path, fmt::format("'{}' must be a non-negative integer", name));
  return std::min<int64_t>(it->get<int64_t>(), 1'000'000);
}

bool accepts_anything(const ojson &schema) {
  if (schema.is_boolean())
    return schema.get<bool>();
  return only_annotations(schema);
}

SchemaCompiler::SchemaCompiler(GrammarData &grammar, const GrammarLimits &limits)
    : g_(grammar), limits_(limits) {
  Node ws;
  ws.kind = NodeKind::ws;
  ws.max = kMaxWhitespace;
  ws_ = add(std::move(ws));
}

int32_t SchemaCompiler::add(Node node) {
  if (g_.nodes.size() >= static_cast<size_t>(limits_.max_nodes))
    throw Error(
        fmt::format("json_schema: the schema needs more than {} grammar nodes", limits_.max_nodes));
  g_.nodes.push_back(std::move(node));
  return static_cast<int32_t>(g_.nodes.size() - 1);
}

int32_t SchemaCompiler::literal(std::string text) {
  Node n;
  n.kind = NodeKind::literal;
  n.text = std::move(text);
  return add(std::move(n));
}

int32_t SchemaCompiler::seq(std::vector<int32_t> kids) {
  Node n;
  n.kind = NodeKind::seq;
  n.kids = std::move(kids);
  return add(std::move(n));
}

int32_t SchemaCompiler::alt(std::vector<int32_t> kids) {
  if (kids.size() == 1)
    return kids[0];
  Node n;
  n.kind = NodeKind::alt;
  n.kids = std::move(kids);
  return add(std::move(n));
}

int32_t SchemaCompiler::add_automaton(const std::string &key, const Nfa &language,
                                      LengthWindow window, const std::string &path) {
  if (const auto it = automaton_memo_.find(key); it != automaton_memo_.end())
    return it->second;
  const size_t max_table = static_cast<size_t>(limits_.max_pattern_states) * 1024;
  try {
    g_.automata.emplace_back(language, window, max_table);
  } catch (const std::invalid_argument &e) {
    refuse(path, e.what());
  }
  // A whole schema may hold 16 automata of the largest size, and one
  // largest length table.
  automaton_states_ += g_.automata.back().states();
  table_entries_ += g_.automata.back().table_entries();
  if (automaton_states_ > max_table / 64)
    refuse(path, fmt::format("the schema's patterns, formats and bounds need more than {} "
                             "automaton states in all",
                             max_table / 64));
  if (table_entries_ > max_table)
    refuse(path, fmt::format("the schema's length limits beside patterns need more than {} "
                             "table entries in all",
                             max_table));
  const auto index = static_cast<int32_t>(g_.automata.size() - 1);
  automaton_memo_[key] = index;
  return index;
}

int32_t SchemaCompiler::any_value() {
  if (any_ >= 0)
    return any_;
  // Recursive: the alternatives refer back to any_, so it exists first.
  any_ = add(Node{});
  g_.nodes[static_cast<size_t>(any_)].kind = NodeKind::alt;
  Node str;
  str.kind = NodeKind::string;
  Node num;
  num.kind = NodeKind::number;
  const int32_t string_node = add(std::move(str)), number_node = add(std::move(num));
  ObjectShape shape;
  shape.additional = any_;
  any_object_ = object_node(shape, "#");
  Node rep;
  rep.kind = NodeKind::repeat;
  rep.kids = {seq({ws_, any_}), seq({ws_, literal(",")})};
  rep.min = 0;
  rep.max = -1;
  const int32_t open = literal("[");
  const int32_t items = add(std::move(rep));
  const int32_t array_node = seq({open, items, seq({ws_, literal("]")})});
  g_.nodes[static_cast<size_t>(any_)].kids = {any_object_,    array_node,      string_node,
                                              number_node,    literal("true"), literal("false"),
                                              literal("null")};
  return any_;
}

int32_t SchemaCompiler::any_object() {
  any_value();
  return any_object_;
}

int32_t SchemaCompiler::value(const ojson &schema, const ojson &root, const std::string &path,
                              int32_t depth) {
  root_ = &root;
  return schema_value(schema, path, depth);
}

int32_t SchemaCompiler::schema_value(const ojson &schema, const std::string &path, int32_t depth) {
  if (depth > limits_.max_depth)
    refuse(path, fmt::format("the schema nests deeper than {} levels", limits_.max_depth));
  const SchemaKey key{root_, &schema};
  if (const auto done = done_.find(key); done != done_.end())
    return done->second;
  for (Open &open : open_)
    if (open.key == key) {
      if (open.containers == containers_)
        refuse(path, fmt::format("the recursive '$ref' \"{}\" comes back to itself before an "
                                 "object or array opens (left recursion is not supported)",
                                 open.path));
      open.used = true;
      return open.node;
    }
  // A stand-in for uses inside itself; it reads what the schema reads.
  const int32_t node = seq({});
  open_.push_back({key, path, containers_, node});
  int32_t body;
  const auto ref = schema.is_object() ? lone_reference(schema) : std::nullopt;
  if (ref) {
    if (const auto r = schema.find("$ref"); r != schema.end() && !r->is_string())
      refuse(path, "'$ref' must be a string");
    body = reference(*ref, path, depth);
  } else {
    Parts parts;
    collect(schema, path, parts, depth);
    body = conjunction(std::move(parts), depth);
  }
  const bool used = open_.back().used;
  open_.pop_back();
  g_.nodes[static_cast<size_t>(node)].kids = {body};
  const int32_t result = used ? node : body;
  done_[key] = result;
  return result;
}

void SchemaCompiler::collect(const ojson &schema, const std::string &path, Parts &parts,
                             int32_t depth) {
  if (depth > limits_.max_depth)
    refuse(path, fmt::format("the schema nests deeper than {} levels", limits_.max_depth));
  if (schema.is_boolean()) {
    if (!schema.get<bool>())
      refuse(path, "the schema false matches nothing");
    return;
  }
  if (!schema.is_object())
    refuse(path, "a schema must be an object or a boolean");
  for (const auto &[key, v] : schema.items())
    if (!is_annotation(key) && !is_supported(key))
      refuse(path, fmt::format("the keyword '{}' is not supported", key));
  parts.push_back({&schema, path, 0});
  if (const auto ref = schema.find("$ref"); ref != schema.end()) {
    if (!ref->is_string())
      refuse(path, "'$ref' must be a string");
    const std::string target_path = ref->get<std::string>();
    const ojson *target = Resolver(*root_).find(target_path);
    if (target == nullptr)
      refuse(path,
             target_path.empty() || target_path[0] != '#'
                 ? fmt::format("'$ref' \"{}\" is not a reference into this schema", target_path)
                 : fmt::format("'$ref' \"{}\" points to nothing", target_path));
    // Taking the target's keywords in is finite (nested schemas are
    // compiled, and shared, later), unless a chain of such references comes
    // back to one being taken in.
    const SchemaKey key{root_, target};
    if (std::find(collecting_.begin(), collecting_.end(), key) != collecting_.end())
      refuse(path, fmt::format("the '$ref' \"{}\" comes back to itself through 'allOf' or "
                               "'$ref' beside other keywords: no value can be built",
                               target_path));
    collecting_.push_back(key);
    collect(*target, target_path, parts, depth + 1);
    collecting_.pop_back();
  }
  if (const auto all = schema.find("allOf"); all != schema.end()) {
    if (!all->is_array() || all->empty())
      refuse(path + "/allOf", "'allOf' must be a non-empty array of schemas");
    for (size_t i = 0; i < all->size(); ++i)
      collect((*all)[i], fmt::format("{}/allOf/{}", path, i), parts, depth + 1);
  }
}

int32_t SchemaCompiler::conjunction(Parts parts, int32_t depth) {
  // anyOf and oneOf distribute over the other parts: A and (B or C) is
  // (A and B) or (A and C).
  for (size_t i = 0; i < parts.size(); ++i)
    for (const auto &[keyword, bit] : {std::pair{"anyOf", kAnyOfDone}, {"oneOf", kOneOfDone}}) {
      const auto it = parts[i].schema->find(keyword);
      if (it == parts[i].schema->end() || (parts[i].alternatives_done & bit))
        continue;
      const std::string here = parts[i].path + "/" + keyword;
      if (!it->is_array() || it->empty())
        refuse(here, fmt::format("'{}' must be a non-empty array of schemas", keyword));
      if (std::string_view(keyword) == "oneOf") {
        const Resolver refs(*root_);
        for (size_t a = 0; a < it->size(); ++a)
          for (size_t b = a + 1; b < it->size(); ++b)
            if (const auto why = overlap((*it)[a], (*it)[b], refs))
              refuse(here, fmt::format("'oneOf' whose alternatives {} and {} can both match ({}) "
                                       "is not supported (use 'anyOf' if matching several is fine)",
                                       a, b, *why));
      }
      Parts rest = parts;
      rest[i].alternatives_done |= bit;
      const bool rest_free = std::all_of(rest.begin(), rest.end(), part_is_free);
      std::vector<int32_t> kids;
      for (size_t a = 0; a < it->size(); ++a) {
        const std::string branch = fmt::format("{}/{}", here, a);
        if (rest_free) {
          kids.push_back(schema_value((*it)[a], branch, depth + 1));
        } else {
          Parts with = rest;
          collect((*it)[a], branch, with, depth + 1);
          kids.push_back(conjunction(std::move(with), depth + 1));
        }
      }
      return alt(std::move(kids));
    }
  if (std::all_of(parts.begin(), parts.end(), part_is_free))
    return any_value();

  const std::string &path = parts.front().path;
  std::optional<std::vector<std::string>> types;
  for (const Part &part : parts) {
    const auto t = part.schema->find("type");
    if (t == part.schema->end())
      continue;
    std::vector<std::string> listed;
    for (const auto &name : t->is_array() ? *t : ojson::array({*t})) {
      static const std::set<std::string> kTypes = {"object", "array",   "string", "integer",
                                                   "number", "boolean", "null"};
      if (!name.is_string() || !kTypes.contains(name.get<std::string>()))
        refuse(part.path, fmt::format("'type' {} is not a JSON Schema type", name.dump()));
      listed.push_back(name.get<std::string>());
    }
    if (listed.empty())
      refuse(part.path, "'type' is an empty list");
    types = types ? shared_types(*types, listed) : listed;
    if (types->empty())
      refuse(part.path, "the 'type's of the schemas that all apply have none in common");
  }
  auto allowed_by_type = [&](const ojson &v) {
    return !types || std::any_of(types->begin(), types->end(),
                                 [&](const std::string &t) { return matches_type(v, t); });
  };
  std::optional<std::vector<ojson>> values;
  for (const Part &part : parts) {
    std::vector<ojson> listed;
    if (const auto c = part.schema->find("const"); c != part.schema->end()) {
      if (!allowed_by_type(*c))
        refuse(part.path, "'const' does not have the schema's 'type'");
      listed.push_back(*c);
    }
    if (const auto e = part.schema->find("enum"); e != part.schema->end()) {
      if (!e->is_array() || e->empty())
        refuse(part.path, "'enum' must be a non-empty array");
      if (e->size() > static_cast<size_t>(limits_.max_enum))
        refuse(part.path,
               fmt::format("'enum' holds {} values (at most {})", e->size(), limits_.max_enum));
      std::vector<ojson> in_enum;
      for (const auto &v : *e)
        if (allowed_by_type(v))
          in_enum.push_back(v);
      if (in_enum.empty())
        refuse(part.path, "no 'enum' value has the schema's 'type'");
      if (!listed.empty()) { // const and enum side by side
        const bool in = std::find(in_enum.begin(), in_enum.end(), listed[0]) != in_enum.end();
        listed = in ? listed : std::vector<ojson>{};
      } else {
        listed = std::move(in_enum);
      }
    }
    if (!part.schema->contains("const") && !part.schema->contains("enum"))
      continue;
    if (values) {
      std::vector<ojson> both;
      for (const ojson &v : *values)
        if (std::find(listed.begin(), listed.end(), v) != listed.end())
          both.push_back(v);
      listed = std::move(both);
    }
    if (listed.empty())
      refuse(part.path, "no value is allowed by every 'const' and 'enum' that applies");
    values = std::move(listed);
  }
  if (values)
    return literals(*values, path);
  if (!types) {
    // Without 'type', the keywords present say which kind is meant; the
    // grammar produces that kind (a valid subset of what the schema allows).
    if (parts_have(parts, {"properties", "required", "additionalProperties", "propertyNames",
                           "minProperties", "maxProperties", "dependentRequired"}))
      types = {"object"};
    else if (parts_have(parts, {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}))
      types = {"array"};
    else if (parts_have(parts, {"pattern", "minLength", "maxLength", "format"}))
      types = {"string"};
    else if (parts_have(parts, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                "multipleOf"}))
      types = {"number"};
    else
      return any_value();
  }
  std::vector<int32_t> kids;
  for (const std::string &t : *types)
    kids.push_back(typed(t, parts, depth));
  return alt(std::move(kids));
}

int32_t SchemaCompiler::all_of(const std::vector<Found> &schemas, int32_t depth) {
  if (schemas.empty())
    return any_value();
  if (schemas.size() == 1)
    return schema_value(*schemas[0].value, schemas[0].path, depth);
  Parts parts;
  for (const Found &s : schemas)
    collect(*s.value, s.path, parts, depth);
  return conjunction(std::move(parts), depth);
}

int32_t SchemaCompiler::literals(const std::vector<ojson> &values, const std::string &path) {
  std::vector<int32_t> kids;
  std::vector<ojson> seen;
  for (const ojson &v : values) {
    if (std::find(seen.begin(), seen.end(), v) != seen.end())
      continue;
    seen.push_back(v);
    std::string text = v.dump();
    if (text.size() > static_cast<size_t>(limits_.max_literal_bytes))
      refuse(path, fmt::format("a const or enum value of {} bytes (at most {})", text.size(),
                               limits_.max_literal_bytes));
    kids.push_back(literal(std::move(text)));
  }
  return alt(std::move(kids));
}

int32_t SchemaCompiler::typed(const std::string &type, const Parts &parts, int32_t depth) {
  if (type == "object")
    return object(parts, depth);
  if (type == "array")
    return array(parts, depth);
  if (type == "string")
    return string(parts);
  if (type == "integer" || type == "number")
    return number(parts, type == "integer");
  if (type == "boolean")
    return alt({literal("true"), literal("false")});
  return literal("null");
}

int32_t SchemaCompiler::reference(const std::string &ref, const std::string &path, int32_t depth) {
  const ojson *target = Resolver(*root_).find(ref);
  if (target == nullptr)
    refuse(path, ref.empty() || ref[0] != '#'
                     ? fmt::format("'$ref' \"{}\" is not a reference into this schema", ref)
                     : fmt::format("'$ref' \"{}\" points to nothing", ref));
  for (const Open &open : open_)
    if (open.key == SchemaKey{root_, target} && open.containers == containers_)
      refuse(path, fmt::format("the recursive '$ref' \"{}\" comes back to itself before an "
                               "object or array opens (left recursion is not supported)",
                               ref));
  return schema_value(*target, ref, depth + 1);
}

} // namespace bonsai::constrain

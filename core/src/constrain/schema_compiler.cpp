// The supported JSON Schema subset, keyword by keyword. Whatever is not
// handled here is refused by name: a schema is never silently weakened.
#include "schema_compiler.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int32_t kMaxWhitespace = 20;

// Keywords that only describe: they constrain nothing.
const std::set<std::string> kAnnotations = {"title",    "description", "$schema",  "$id",
                                            "$comment", "default",     "examples", "deprecated",
                                            "readOnly", "writeOnly"};
const std::set<std::string> kSupported = {
    "type",       "enum",     "const",    "properties", "required",  "additionalProperties",
    "items",      "minItems", "maxItems", "minLength",  "maxLength", "pattern",
    "anyOf",      "oneOf",    "allOf",    "$ref",       "$defs",     "definitions",
    "uniqueItems"};

[[noreturn]] void refuse(const std::string &path, const std::string &what) {
  throw Error(fmt::format("json_schema: {} (at {})", what, path));
}

// The JSON types a value of `schema` can have, for oneOf's disjointness
// check: object, array, string, number (integers included), boolean, null.
std::set<std::string> value_types(const ojson &schema) {
  static const std::set<std::string> kAll = {"object", "array",   "string",
                                             "number", "boolean", "null"};
  if (!schema.is_object())
    return kAll;
  auto json_type = [](const ojson &v) -> std::string {
    if (v.is_object())
      return "object";
    if (v.is_array())
      return "array";
    if (v.is_string())
      return "string";
    if (v.is_number())
      return "number";
    if (v.is_boolean())
      return "boolean";
    return "null";
  };
  if (const auto c = schema.find("const"); c != schema.end())
    return {json_type(*c)};
  if (const auto t = schema.find("type"); t != schema.end()) {
    std::set<std::string> out;
    for (const auto &name : t->is_array() ? *t : ojson::array({*t}))
      if (name.is_string())
        out.insert(name == "integer" ? "number" : name.get<std::string>());
    return out;
  }
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    std::set<std::string> out;
    for (const auto &v : *e)
      out.insert(json_type(v));
    return out;
  }
  return kAll;
}

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

int64_t count_field(const ojson &schema, const char *name, const std::string &path,
                    int64_t fallback) {
  const auto it = schema.find(name);
  if (it == schema.end())
    return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    refuse(path, fmt::format("'{}' must be a non-negative integer", name));
  return std::min<int64_t>(it->get<int64_t>(), 1'000'000);
}

// A property name that the grammar writes between quotes without escapes.
void check_name(const std::string &name, const std::string &path, int32_t max_bytes) {
  if (name.size() > static_cast<size_t>(max_bytes))
    refuse(path, fmt::format("a property name of {} bytes (at most {})", name.size(), max_bytes));
  for (const char c : name)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      refuse(path, "a property or tool name holding a quote, a backslash or a control character "
                   "is not supported");
}

} // namespace

bool accepts_anything(const ojson &schema) {
  if (schema.is_boolean())
    return schema.get<bool>();
  if (!schema.is_object())
    return false;
  return std::all_of(schema.items().begin(), schema.items().end(), [](const auto &item) {
    return kAnnotations.contains(item.key()) || item.key() == "$defs" ||
           item.key() == "definitions";
  });
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

int32_t SchemaCompiler::object_node(const std::vector<Property> &properties, int32_t additional,
                                    const std::string &path) {
  if (properties.size() > static_cast<size_t>(limits_.max_properties))
    refuse(path, fmt::format("an object of {} properties (at most {})", properties.size(),
                             limits_.max_properties));
  const int32_t colon = literal(":"), comma = literal(",");
  Node obj;
  obj.kind = NodeKind::object;
  auto member = [&](int32_t key, int32_t value) {
    ObjectMember m;
    m.first = seq({ws_, key, ws_, colon, ws_, value});
    m.next = seq({ws_, comma, m.first});
    return m;
  };
  std::vector<std::string> names;
  for (const Property &p : properties) {
    check_name(p.name, path, limits_.max_literal_bytes);
    ObjectMember m = member(literal("\"" + p.name + "\""), p.value);
    m.required = p.required;
    obj.members.push_back(m);
    names.push_back(p.name);
  }
  if (additional >= 0) {
    Node key;
    key.kind = NodeKind::string;
    std::sort(names.begin(), names.end());
    key.excluded = std::move(names);
    obj.additional = member(add(std::move(key)), additional);
  }
  obj.close = seq({ws_, literal("}")});
  const int32_t open = literal("{");
  return seq({open, add(std::move(obj))});
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
  any_object_ = object_node({}, any_, "#");
  const int32_t array_node = seq({literal("["),
                                  [&] {
                                    Node rep;
                                    rep.kind = NodeKind::repeat;
                                    rep.kids = {seq({ws_, any_}), seq({ws_, literal(",")})};
                                    rep.min = 0;
                                    rep.max = -1;
                                    return add(std::move(rep));
                                  }(),
                                  seq({ws_, literal("]")})});
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
  if (depth > limits_.max_depth)
    refuse(path, fmt::format("the schema nests deeper than {} levels", limits_.max_depth));
  if (schema.is_boolean()) {
    if (!schema.get<bool>())
      refuse(path, "the schema false matches nothing");
    return any_value();
  }
  if (!schema.is_object())
    refuse(path, "a schema must be an object or a boolean");
  for (const auto &[key, v] : schema.items()) {
    if (kAnnotations.contains(key))
      continue;
    if (!kSupported.contains(key))
      refuse(path, fmt::format("the keyword '{}' is not supported", key));
    if (key == "uniqueItems" && !(v.is_boolean() && !v.get<bool>()))
      refuse(path, "the keyword 'uniqueItems' is supported only as false");
  }
  auto alone = [&](const char *keyword) {
    for (const auto &[key, v] : schema.items())
      if (key != keyword && !kAnnotations.contains(key) && key != "$defs" && key != "definitions" &&
          key != "uniqueItems")
        refuse(path, fmt::format("'{}' beside '{}' is not supported; move it into the "
                                 "alternatives",
                                 key, keyword));
  };
  if (const auto ref = schema.find("$ref"); ref != schema.end()) {
    alone("$ref");
    if (!ref->is_string())
      refuse(path, "'$ref' must be a string");
    return reference(ref->get<std::string>(), root, path, depth);
  }
  for (const char *combinator : {"anyOf", "oneOf", "allOf"}) {
    const auto it = schema.find(combinator);
    if (it == schema.end())
      continue;
    alone(combinator);
    const std::string here = path + "/" + combinator;
    if (!it->is_array() || it->empty())
      refuse(here, fmt::format("'{}' must be a non-empty array of schemas", combinator));
    if (std::string_view(combinator) == "allOf") {
      if (it->size() != 1)
        refuse(here, "'allOf' with more than one schema is not supported");
      return value((*it)[0], root, here + "/0", depth + 1);
    }
    if (std::string_view(combinator) == "oneOf") {
      std::set<std::string> seen;
      for (const auto &branch : *it)
        for (const std::string &t : value_types(branch))
          if (!seen.insert(t).second)
            refuse(here, "'oneOf' whose alternatives can share a JSON type is not supported "
                         "(use 'anyOf' if matching several is fine)");
    }
    std::vector<int32_t> kids;
    for (size_t i = 0; i < it->size(); ++i)
      kids.push_back(value((*it)[i], root, fmt::format("{}/{}", here, i), depth + 1));
    return alt(std::move(kids));
  }
  std::vector<std::string> types;
  if (const auto t = schema.find("type"); t != schema.end()) {
    for (const auto &name : t->is_array() ? *t : ojson::array({*t})) {
      static const std::set<std::string> kTypes = {"object", "array",   "string", "integer",
                                                   "number", "boolean", "null"};
      if (!name.is_string() || !kTypes.contains(name.get<std::string>()))
        refuse(path, fmt::format("'type' {} is not a JSON Schema type", name.dump()));
      types.push_back(name.get<std::string>());
    }
    if (types.empty())
      refuse(path, "'type' is an empty list");
  }
  auto literal_of = [&](const ojson &v) {
    std::string text = v.dump();
    if (text.size() > static_cast<size_t>(limits_.max_literal_bytes))
      refuse(path, fmt::format("a const or enum value of {} bytes (at most {})", text.size(),
                               limits_.max_literal_bytes));
    return literal(std::move(text));
  };
  auto allowed_by_type = [&](const ojson &v) {
    return types.empty() || std::any_of(types.begin(), types.end(),
                                        [&](const std::string &t) { return matches_type(v, t); });
  };
  if (const auto c = schema.find("const"); c != schema.end()) {
    if (!allowed_by_type(*c))
      refuse(path, "'const' does not have the schema's 'type'");
    return literal_of(*c);
  }
  if (const auto e = schema.find("enum"); e != schema.end()) {
    if (!e->is_array() || e->empty())
      refuse(path, "'enum' must be a non-empty array");
    if (e->size() > static_cast<size_t>(limits_.max_enum))
      refuse(path, fmt::format("'enum' holds {} values (at most {})", e->size(), limits_.max_enum));
    std::vector<int32_t> kids;
    for (const auto &v : *e)
      if (allowed_by_type(v))
        kids.push_back(literal_of(v));
    if (kids.empty())
      refuse(path, "no 'enum' value has the schema's 'type'");
    return alt(std::move(kids));
  }
  if (types.empty()) {
    // Without 'type', the keywords present say which kind is meant; the
    // grammar produces that kind (a valid subset of what the schema allows).
    if (schema.contains("properties") || schema.contains("required") ||
        schema.contains("additionalProperties"))
      types = {"object"};
    else if (schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems"))
      types = {"array"};
    else if (schema.contains("pattern") || schema.contains("minLength") ||
             schema.contains("maxLength"))
      types = {"string"};
    else
      return any_value();
  }
  std::vector<int32_t> kids;
  for (const std::string &t : types)
    kids.push_back(typed(t, schema, root, path, depth));
  return alt(std::move(kids));
}

int32_t SchemaCompiler::typed(const std::string &type, const ojson &schema, const ojson &root,
                              const std::string &path, int32_t depth) {
  if (type == "object")
    return object(schema, root, path, depth);
  if (type == "array")
    return array(schema, root, path, depth);
  if (type == "string")
    return string(schema, path);
  if (type == "integer" || type == "number") {
    Node n;
    n.kind = NodeKind::number;
    n.integer = type == "integer";
    return add(std::move(n));
  }
  if (type == "boolean")
    return alt({literal("true"), literal("false")});
  return literal("null");
}

int32_t SchemaCompiler::object(const ojson &schema, const ojson &root, const std::string &path,
                               int32_t depth) {
  std::vector<Property> properties;
  if (const auto props = schema.find("properties"); props != schema.end()) {
    if (!props->is_object())
      refuse(path, "'properties' must be an object");
    for (const auto &[name, sub] : props->items())
      properties.push_back(
          {name, value(sub, root, path + "/properties/" + name, depth + 1), false});
  }
  int32_t additional = -1; // absent: no further properties (a subset the schema allows)
  if (const auto extra = schema.find("additionalProperties"); extra != schema.end()) {
    if (!(extra->is_boolean() && !extra->get<bool>()))
      additional = value(*extra, root, path + "/additionalProperties", depth + 1);
  }
  if (const auto required = schema.find("required"); required != schema.end()) {
    if (!required->is_array())
      refuse(path, "'required' must be an array of property names");
    for (const auto &name : *required) {
      if (!name.is_string())
        refuse(path, "'required' must be an array of property names");
      const auto it = std::find_if(properties.begin(), properties.end(),
                                   [&](const Property &p) { return p.name == name; });
      if (it != properties.end()) {
        it->required = true;
      } else {
        if (schema.contains("additionalProperties") && additional < 0)
          refuse(path, fmt::format("the required property '{}' is not in 'properties' and "
                                   "'additionalProperties' is false",
                                   name.get<std::string>()));
        properties.push_back(
            {name.get<std::string>(), additional >= 0 ? additional : any_value(), true});
      }
    }
  }
  return object_node(properties, additional, path);
}

int32_t SchemaCompiler::array(const ojson &schema, const ojson &root, const std::string &path,
                              int32_t depth) {
  const int64_t min = count_field(schema, "minItems", path, 0);
  const int64_t max = count_field(schema, "maxItems", path, -1);
  if (max >= 0 && max < min)
    refuse(path, "'maxItems' is below 'minItems': nothing matches");
  const auto items = schema.find("items");
  if (items != schema.end() && items->is_array())
    refuse(path, "'items' as an array (tuple form) is not supported");
  const int32_t item =
      items == schema.end() ? any_value() : value(*items, root, path + "/items", depth + 1);
  Node rep;
  rep.kind = NodeKind::repeat;
  rep.kids = {seq({ws_, item}), seq({ws_, literal(",")})};
  rep.min = static_cast<int32_t>(min);
  rep.max = static_cast<int32_t>(max);
  const int32_t open = literal("[");
  const int32_t body = add(std::move(rep));
  return seq({open, body, seq({ws_, literal("]")})});
}

int32_t SchemaCompiler::string(const ojson &schema, const std::string &path) {
  Node n;
  n.kind = NodeKind::string;
  n.min = static_cast<int32_t>(count_field(schema, "minLength", path, 0));
  n.max = static_cast<int32_t>(count_field(schema, "maxLength", path, -1));
  if (n.max >= 0 && n.max < n.min)
    refuse(path, "'maxLength' is below 'minLength': nothing matches");
  if (const auto p = schema.find("pattern"); p != schema.end()) {
    if (!p->is_string())
      refuse(path, "'pattern' must be a string");
    if (schema.contains("minLength") || schema.contains("maxLength"))
      refuse(path, "'pattern' together with 'minLength' or 'maxLength' is not supported; "
                   "state the length in the pattern");
    try {
      g_.regexes.emplace_back(p->get<std::string>(),
                              static_cast<size_t>(limits_.max_pattern_states));
    } catch (const std::invalid_argument &e) {
      refuse(path, e.what());
    }
    n.regex = static_cast<int32_t>(g_.regexes.size() - 1);
  }
  return add(std::move(n));
}

int32_t SchemaCompiler::reference(const std::string &ref, const ojson &root,
                                  const std::string &path, int32_t depth) {
  if (const auto done = refs_done_.find(ref); done != refs_done_.end())
    return done->second;
  if (std::find(refs_open_.begin(), refs_open_.end(), ref) != refs_open_.end())
    refuse(path, fmt::format("the recursive '$ref' \"{}\" is not supported", ref));
  if (ref.empty() || ref[0] != '#')
    refuse(path, fmt::format("'$ref' \"{}\" is not a reference into this schema", ref));
  const ojson *target = &root;
  try {
    if (ref.size() > 1)
      target = &root.at(ojson::json_pointer(ref.substr(1)));
  } catch (const nlohmann::json::exception &) {
    refuse(path, fmt::format("'$ref' \"{}\" points to nothing", ref));
  }
  refs_open_.push_back(ref);
  const int32_t node = value(*target, root, ref, depth + 1);
  refs_open_.pop_back();
  refs_done_[ref] = node;
  return node;
}

} // namespace bonsai::constrain

// Keyword tables, reference lookup, and the type and literal analyses that
// decide whether a oneOf's alternatives are disjoint.
#include "schema_analysis.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

const std::set<std::string> kAnnotations = {
    "title",         "description",     "$schema",         "$id",       "$comment", "default",
    "examples",      "deprecated",      "readOnly",        "writeOnly", "$defs",    "definitions",
    "discriminator", "contentEncoding", "contentMediaType"};

const std::set<std::string> kSupported = {"type",
                                          "enum",
                                          "const",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "uniqueItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "multipleOf",
                                          "propertyNames",
                                          "minProperties",
                                          "maxProperties",
                                          "dependentRequired",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref"};

constexpr int kMaxHops = 64;

std::string json_type(const ojson &v) {
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
}

const std::set<std::string> kAllTypes = {"object", "array", "string", "number", "boolean", "null"};

std::set<std::string> types_within(const ojson &schema, const Resolver &refs, int hops);

std::optional<std::vector<ojson>> literals_within(const ojson &schema, const Resolver &refs,
                                                  int hops) {
  if (hops > kMaxHops || !schema.is_object())
    return std::nullopt;
  if (const auto ref = lone_reference(schema)) {
    const ojson *target = refs.find(*ref);
    return target ? literals_within(*target, refs, hops + 1) : std::nullopt;
  }
  if (const auto c = schema.find("const"); c != schema.end())
    return std::vector<ojson>{*c};
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array())
    return std::vector<ojson>(e->begin(), e->end());
  const std::set<std::string> types = types_within(schema, refs, hops);
  if (types == std::set<std::string>{"boolean"})
    return std::vector<ojson>{true, false};
  if (types == std::set<std::string>{"null"})
    return std::vector<ojson>{nullptr};
  return std::nullopt;
}

std::set<std::string> types_within(const ojson &schema, const Resolver &refs, int hops) {
  if (hops > kMaxHops || !schema.is_object())
    return kAllTypes;
  std::set<std::string> out = kAllTypes;
  auto narrow = [&](const std::set<std::string> &to) {
    std::set<std::string> both;
    std::set_intersection(out.begin(), out.end(), to.begin(), to.end(),
                          std::inserter(both, both.begin()));
    out = std::move(both);
  };
  if (const auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    const ojson *target = refs.find(ref->get<std::string>());
    if (target)
      narrow(types_within(*target, refs, hops + 1));
  }
  if (const auto c = schema.find("const"); c != schema.end())
    narrow({json_type(*c)});
  if (const auto t = schema.find("type"); t != schema.end()) {
    std::set<std::string> listed;
    for (const auto &name : t->is_array() ? *t : ojson::array({*t}))
      if (name.is_string())
        listed.insert(name == "integer" ? "number" : name.get<std::string>());
    narrow(listed);
  }
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    std::set<std::string> listed;
    for (const auto &v : *e)
      listed.insert(json_type(v));
    narrow(listed);
  }
  for (const char *any : {"anyOf", "oneOf"})
    if (const auto alts = schema.find(any); alts != schema.end() && alts->is_array()) {
      std::set<std::string> listed;
      for (const auto &alt : *alts) {
        const auto t = types_within(alt, refs, hops + 1);
        listed.insert(t.begin(), t.end());
      }
      narrow(listed);
    }
  if (const auto all = schema.find("allOf"); all != schema.end() && all->is_array())
    for (const auto &part : *all)
      narrow(types_within(part, refs, hops + 1));
  return out;
}

// The object schema an alternative stands for (through refs), when it is
// one: its `properties` and `required`.
const ojson *object_of(const ojson &schema, const Resolver &refs) {
  const ojson &s = refs.through_refs(schema);
  if (!s.is_object() || types_within(s, refs, 0) != std::set<std::string>{"object"})
    return nullptr;
  return &s;
}

// The values property `name` may have in `object` when it is required and
// finitely many.
std::optional<std::vector<ojson>> tag_values(const ojson &object, const std::string &name,
                                             const Resolver &refs) {
  const auto required = object.find("required");
  const auto props = object.find("properties");
  if (required == object.end() || !required->is_array() || props == object.end() ||
      !props->is_object() || !props->contains(name) ||
      std::find(required->begin(), required->end(), name) == required->end())
    return std::nullopt;
  return literals_within((*props)[name], refs, 0);
}

bool disjoint_values(const std::vector<ojson> &a, const std::vector<ojson> &b) {
  for (const ojson &x : a)
    for (const ojson &y : b)
      if (x == y)
        return false;
  return true;
}

} // namespace

bool is_annotation(const std::string &keyword) {
  return kAnnotations.contains(keyword);
}

bool is_supported(const std::string &keyword) {
  return kSupported.contains(keyword);
}

const ojson *Resolver::find(const std::string &ref) const {
  if (ref.empty() || ref[0] != '#')
    return nullptr;
  if (ref.size() == 1)
    return &root_;
  try {
    return &root_.at(ojson::json_pointer(ref.substr(1)));
  } catch (const nlohmann::json::exception &) {
    return nullptr;
  }
}

const ojson &Resolver::through_refs(const ojson &schema) const {
  const ojson *s = &schema;
  for (int hops = 0; hops < kMaxHops; ++hops) {
    const auto ref = lone_reference(*s);
    const ojson *target = ref ? find(*ref) : nullptr;
    if (!target)
      break;
    s = target;
  }
  return *s;
}

bool only_annotations(const ojson &schema) {
  return schema.is_object() &&
         std::all_of(schema.items().begin(), schema.items().end(),
                     [](const auto &item) { return kAnnotations.contains(item.key()); });
}

std::optional<std::string> lone_reference(const ojson &schema) {
  if (!schema.is_object())
    return std::nullopt;
  std::optional<std::string> ref;
  for (const auto &[key, v] : schema.items()) {
    if (kAnnotations.contains(key))
      continue;
    if (key == "$ref" && v.is_string())
      ref = v.get<std::string>();
    else if (key == "allOf" && v.is_array() && v.size() == 1 && lone_reference(v[0]))
      ref = lone_reference(v[0]);
    else
      return std::nullopt;
  }
  if (schema.contains("$ref") && schema.contains("allOf"))
    return std::nullopt;
  return ref;
}

std::set<std::string> value_types(const ojson &schema, const Resolver &refs) {
  if (schema.is_boolean())
    return schema.get<bool>() ? kAllTypes : std::set<std::string>{};
  return types_within(schema, refs, 0);
}

std::optional<std::vector<ojson>> literal_values(const ojson &schema, const Resolver &refs) {
  return literals_within(schema, refs, 0);
}

std::optional<std::string> overlap(const ojson &a, const ojson &b, const Resolver &refs) {
  const std::set<std::string> ta = value_types(a, refs), tb = value_types(b, refs);
  std::vector<std::string> shared;
  std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::back_inserter(shared));
  if (shared.empty())
    return std::nullopt;
  const auto la = literal_values(a, refs), lb = literal_values(b, refs);
  if (la && lb && disjoint_values(*la, *lb))
    return std::nullopt;
  if (shared == std::vector<std::string>{"object"}) {
    const ojson *oa = object_of(a, refs), *ob = object_of(b, refs);
    if (oa && ob && oa->contains("properties") && (*oa)["properties"].is_object())
      for (const auto &[name, sub] : (*oa)["properties"].items()) {
        const auto va = tag_values(*oa, name, refs), vb = tag_values(*ob, name, refs);
        if (va && vb && disjoint_values(*va, *vb))
          return std::nullopt; // a discriminated union
      }
    return std::string("both can be objects, and no required property with a const or enum "
                       "tells them apart");
  }
  return fmt::format("both can be of type {}", shared.front());
}

} // namespace bonsai::constrain

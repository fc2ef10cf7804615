// Objects: properties merged over the parts that apply, required,
// additionalProperties, propertyNames, min/maxProperties and
// dependentRequired.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "schema_compiler.hpp"

namespace bonsai::constrain {
namespace {

constexpr size_t kMaxDependentMembers = 64;

// A property name that the grammar writes between quotes without escapes.
void check_name(const std::string &name, const std::string &path, int32_t max_bytes) {
  if (name.size() > static_cast<size_t>(max_bytes))
    refuse(path, fmt::format("a property name of {} bytes (at most {})", name.size(), max_bytes));
  for (const char c : name)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      refuse(path, "a property or tool name holding a quote, a backslash or a control character "
                   "is not supported");
}

std::vector<std::string> name_list(const ojson &v, const char *keyword, const std::string &path) {
  if (!v.is_array())
    refuse(path, fmt::format("'{}' must be an array of property names", keyword));
  std::vector<std::string> out;
  for (const auto &name : v) {
    if (!name.is_string())
      refuse(path, fmt::format("'{}' must be an array of property names", keyword));
    out.push_back(name.get<std::string>());
  }
  return out;
}

// The names a propertyNames conjunction allows when it lists them (const or
// enum in every part that has one).
std::optional<std::vector<std::string>> listed_names(const SchemaCompiler::Parts &parts) {
  std::optional<std::vector<std::string>> out;
  for (const auto &part : parts) {
    std::vector<std::string> listed;
    const ojson &s = *part.schema;
    if (!s.contains("const") && !s.contains("enum"))
      continue;
    const ojson values = s.contains("const") ? ojson::array({s["const"]}) : s["enum"];
    if (!values.is_array())
      refuse(part.path, "'enum' must be a non-empty array");
    for (const auto &v : values)
      if (v.is_string() && (!out || std::find(out->begin(), out->end(), v) != out->end()))
        listed.push_back(v.get<std::string>());
    out = std::move(listed);
  }
  return out;
}

} // namespace

int32_t SchemaCompiler::object(const Parts &parts, int32_t depth) {
  const std::string &path = parts.front().path;
  // Every declared name, in the order of first mention.
  std::vector<std::string> names;
  for (const Part &part : parts)
    if (const auto props = part.schema->find("properties"); props != part.schema->end()) {
      if (!props->is_object())
        refuse(part.path, "'properties' must be an object");
      for (const auto &[name, sub] : props->items())
        if (std::find(names.begin(), names.end(), name) == names.end())
          names.push_back(name);
    }
  std::vector<std::string> required;
  for (const Part &part : parts)
    if (const auto r = part.schema->find("required"); r != part.schema->end())
      for (std::string &name : name_list(*r, "required", part.path))
        if (std::find(required.begin(), required.end(), name) == required.end())
          required.push_back(std::move(name));
  for (const std::string &name : required)
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  auto is_required = [&](const std::string &name) {
    return std::find(required.begin(), required.end(), name) != required.end();
  };

  // What each part says about a name: its property schema, its
  // additionalProperties, or nothing.
  auto schemas_for = [&](const std::string &name,
                         std::string &forbidden_by) -> std::optional<std::vector<Found>> {
    std::vector<Found> out;
    for (const Part &part : parts) {
      const ojson &s = *part.schema;
      if (const auto props = s.find("properties"); props != s.end() && props->contains(name)) {
        out.push_back({&(*props)[name], part.path + "/properties/" + name});
        continue;
      }
      const auto extra = s.find("additionalProperties");
      if (extra == s.end() || (extra->is_boolean() && extra->get<bool>()))
        continue;
      if (extra->is_boolean()) {
        forbidden_by = part.path;
        return std::nullopt;
      }
      out.push_back({&*extra, part.path + "/additionalProperties"});
    }
    return out;
  };
  // Further names: each part's additionalProperties; absent everywhere, no
  // further properties (a subset of what the schema allows).
  bool extra_allowed = false, extra_forbidden = false;
  std::vector<Found> extra_schemas;
  for (const Part &part : parts)
    if (const auto extra = part.schema->find("additionalProperties"); extra != part.schema->end()) {
      extra_allowed = true;
      if (extra->is_boolean())
        extra_forbidden = extra_forbidden || !extra->get<bool>();
      else
        extra_schemas.push_back({&*extra, part.path + "/additionalProperties"});
    }
  extra_allowed = extra_allowed && !extra_forbidden;

  // propertyNames: a list of names, or string constraints on every name.
  Parts key_parts;
  for (const Part &part : parts)
    if (const auto pn = part.schema->find("propertyNames"); pn != part.schema->end())
      collect(*pn, part.path + "/propertyNames", key_parts, depth + 1);
  for (const Part &kp : key_parts)
    if (kp.schema->contains("anyOf") || kp.schema->contains("oneOf"))
      refuse(kp.path, "'propertyNames' with 'anyOf' or 'oneOf' is not supported");
  const auto listed = listed_names(key_parts);
  std::optional<StringLanguage> key_language;
  if (!listed && !key_parts.empty()) {
    StringLanguage lang = string_language(key_parts, {}, key_parts.front().path);
    if (lang.constrained || lang.window.min_chars > 0 || lang.window.max_chars >= 0)
      key_language = std::move(lang);
  }
  auto name_allowed = [&](const std::string &name) {
    if (listed)
      return std::find(listed->begin(), listed->end(), name) != listed->end();
    if (!key_language)
      return true;
    const auto chars = static_cast<int32_t>(std::count_if(
        name.begin(), name.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; }));
    if (chars < key_language->window.min_chars ||
        (key_language->window.max_chars >= 0 && chars > key_language->window.max_chars))
      return false;
    return !key_language->constrained || accepts_text(key_language->language, name);
  };
  if (listed && extra_allowed)
    for (const std::string &name : *listed)
      if (std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name); // listed names become optional properties

  std::vector<Property> properties;
  std::vector<std::vector<Found>> property_schemas;
  for (const std::string &name : names) {
    std::string forbidden_by;
    auto schemas = schemas_for(name, forbidden_by);
    if (schemas && !name_allowed(name)) {
      forbidden_by = key_parts.front().path;
      schemas.reset();
    }
    if (!schemas) {
      if (is_required(name))
        refuse(path, fmt::format("the required property '{}' is not allowed by {}", name,
                                 forbidden_by == path ? std::string("'additionalProperties': false")
                                                      : "the schema at " + forbidden_by));
      continue;
    }
    properties.push_back({name, -1, is_required(name), 0});
    property_schemas.push_back(std::move(*schemas));
  }

  // dependentRequired: members that must come with another, followed
  // through; a required member's needs are required too.
  auto index_of = [&](const std::string &name) {
    for (size_t i = 0; i < properties.size(); ++i)
      if (properties[i].name == name)
        return static_cast<int32_t>(i);
    return -1;
  };
  bool has_dependencies = false;
  for (const Part &part : parts) {
    const auto deps = part.schema->find("dependentRequired");
    if (deps == part.schema->end())
      continue;
    const std::string here = part.path + "/dependentRequired";
    if (!deps->is_object())
      refuse(here, "'dependentRequired' must be an object of name lists");
    for (const auto &[name, list] : deps->items()) {
      const int32_t from = index_of(name);
      for (const std::string &needed : name_list(list, "dependentRequired", here)) {
        const int32_t to = index_of(needed);
        if (from < 0)
          break; // the property never appears: nothing is needed
        if (to < 0)
          refuse(here, fmt::format("'{}' needs '{}', which the object cannot have", name, needed));
        if (static_cast<size_t>(std::max(from, to)) >= kMaxDependentMembers)
          refuse(here, fmt::format("'dependentRequired' among the first {} properties only",
                                   kMaxDependentMembers));
        properties[static_cast<size_t>(from)].needs |= uint64_t{1} << to;
        has_dependencies = true;
      }
    }
  }
  if (has_dependencies) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < properties.size() && i < kMaxDependentMembers; ++i) {
        uint64_t closure = properties[i].needs;
        for (size_t j = 0; j < properties.size() && j < kMaxDependentMembers; ++j)
          if (properties[i].needs >> j & 1)
            closure |= properties[j].needs;
        closure &= ~(uint64_t{1} << i);
        if (closure != properties[i].needs) {
          properties[i].needs = closure;
          changed = true;
        }
        if (properties[i].required)
          for (size_t j = 0; j < properties.size() && j < kMaxDependentMembers; ++j)
            if ((closure >> j & 1) && !properties[j].required) {
              properties[j].required = true;
              changed = true;
            }
      }
    }
  }

  ObjectShape shape;
  int64_t min_members = 0, max_members = -1;
  for (const Part &part : parts) {
    min_members = std::max(min_members, count_field(*part.schema, "minProperties", part.path, 0));
    if (const int64_t m = count_field(*part.schema, "maxProperties", part.path, -1); m >= 0)
      max_members = max_members < 0 ? m : std::min(max_members, m);
  }
  const auto required_count = static_cast<int64_t>(std::count_if(
      properties.begin(), properties.end(), [](const Property &p) { return p.required; }));
  const bool further_keys = extra_allowed && !listed;
  if (max_members >= 0 && required_count > max_members)
    refuse(path, fmt::format("{} properties are required but 'maxProperties' is {}", required_count,
                             max_members));
  // Further properties count once: their names could repeat.
  const auto most = static_cast<int64_t>(properties.size()) + (further_keys ? 1 : 0);
  if (min_members > most)
    refuse(path, fmt::format("'minProperties' {} needs more properties than can be told apart "
                             "while writing ({}: the named ones and one further)",
                             min_members, most));
  if (has_dependencies && min_members > required_count)
    refuse(path, "'dependentRequired' together with a 'minProperties' above the required "
                 "properties is not supported");
  shape.min_members = static_cast<int32_t>(min_members);
  shape.max_members = static_cast<int32_t>(max_members);

  ++containers_;
  for (size_t i = 0; i < properties.size(); ++i)
    properties[i].value = all_of(property_schemas[i], depth + 1);
  if (further_keys) {
    shape.additional = all_of(extra_schemas, depth + 1);
    if (key_language) {
      std::vector<std::string> excluded;
      for (const Property &p : properties)
        excluded.push_back(p.name);
      shape.key = string_node(key_parts, excluded, key_parts.front().path);
    }
  }
  --containers_;
  shape.properties = std::move(properties);
  return object_node(shape, path);
}

int32_t SchemaCompiler::object_node(const ObjectShape &shape, const std::string &path) {
  if (shape.properties.size() > static_cast<size_t>(limits_.max_properties))
    refuse(path, fmt::format("an object of {} properties (at most {})", shape.properties.size(),
                             limits_.max_properties));
  const int32_t colon = literal(":"), comma = literal(",");
  Node obj;
  obj.kind = NodeKind::object;
  obj.min = shape.min_members;
  obj.max = shape.max_members;
  auto member = [&](int32_t key, int32_t value) {
    ObjectMember m;
    m.first = seq({ws_, key, ws_, colon, ws_, value});
    m.next = seq({ws_, comma, m.first});
    return m;
  };
  std::vector<std::string> names;
  for (const Property &p : shape.properties) {
    check_name(p.name, path, limits_.max_literal_bytes);
    ObjectMember m = member(literal("\"" + p.name + "\""), p.value);
    m.required = p.required;
    m.needs = p.needs;
    obj.members.push_back(m);
    names.push_back(p.name);
  }
  if (shape.additional >= 0) {
    int32_t key = shape.key;
    if (key < 0) {
      Node any_key;
      any_key.kind = NodeKind::string;
      std::sort(names.begin(), names.end());
      any_key.excluded = std::move(names);
      key = add(std::move(any_key));
    }
    obj.additional = member(key, shape.additional);
  }
  obj.close = seq({ws_, literal("}")});
  const int32_t open = literal("{");
  return seq({open, add(std::move(obj))});
}

} // namespace bonsai::constrain

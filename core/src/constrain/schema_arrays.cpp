// Arrays: items, prefixItems (tuples), minItems/maxItems, and uniqueItems
// where the items are finitely many literals.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "schema_compiler.hpp"

namespace bonsai::constrain {
namespace {

constexpr size_t kMaxDistinctChoices = 64;

} // namespace

int32_t SchemaCompiler::array(const Parts &parts, int32_t depth) {
  const std::string &path = parts.front().path;
  int64_t min = 0, max = -1;
  bool unique = false;
  size_t prefix = 0;
  for (const Part &part : parts) {
    const ojson &s = *part.schema;
    min = std::max(min, count_field(s, "minItems", part.path, 0));
    if (const int64_t m = count_field(s, "maxItems", part.path, -1); m >= 0)
      max = max < 0 ? m : std::min(max, m);
    if (const auto u = s.find("uniqueItems"); u != s.end()) {
      if (!u->is_boolean())
        refuse(part.path, "'uniqueItems' must be a boolean");
      unique = unique || u->get<bool>();
    }
    if (const auto items = s.find("items"); items != s.end() && items->is_array())
      refuse(part.path, "'items' as an array (the draft 4 tuple form) is not supported; use "
                        "'prefixItems'");
    if (const auto p = s.find("prefixItems"); p != s.end()) {
      if (!p->is_array() || p->empty())
        refuse(part.path, "'prefixItems' must be a non-empty array of schemas");
      prefix = std::max(prefix, p->size());
    }
  }
  // The schemas for the item at `index` (each part's prefixItems there, or
  // its items); nullopt when some part allows no item there.
  auto schemas_at = [&](size_t index) -> std::optional<std::vector<Found>> {
    std::vector<Found> out;
    for (const Part &part : parts) {
      const ojson &s = *part.schema;
      const auto p = s.find("prefixItems");
      if (p != s.end() && index < p->size()) {
        out.push_back({&(*p)[index], fmt::format("{}/prefixItems/{}", part.path, index)});
        continue;
      }
      const auto items = s.find("items");
      if (items == s.end() || (items->is_boolean() && items->get<bool>()))
        continue;
      if (items->is_boolean())
        return std::nullopt;
      out.push_back({&*items, part.path + "/items"});
    }
    return out;
  };
  ++containers_;
  std::vector<int32_t> heads; // the prefix items' nodes
  for (size_t i = 0; i < prefix && (max < 0 || static_cast<int64_t>(i) < max); ++i) {
    const auto schemas = schemas_at(i);
    if (!schemas) {
      max = static_cast<int64_t>(i);
      break;
    }
    heads.push_back(all_of(*schemas, depth + 1));
  }
  const auto rest_schemas = schemas_at(std::max(prefix, heads.size()));
  if (!rest_schemas)
    max = max < 0 ? static_cast<int64_t>(heads.size())
                  : std::min<int64_t>(max, static_cast<int64_t>(heads.size()));
  if (max >= 0 && max < min)
    refuse(path, fmt::format("the array can hold at most {} items but 'minItems' is {}: nothing "
                             "matches",
                             max, min));
  if (unique && max != 0 && max != 1) {
    if (!heads.empty())
      refuse(path, "'uniqueItems' with 'prefixItems' is not supported");
    std::optional<std::vector<ojson>> values;
    const Resolver refs(*root_);
    for (const Found &s : *rest_schemas) {
      auto listed = literal_values(*s.value, refs);
      if (!listed)
        refuse(path, "'uniqueItems' is supported only for items that are a const, an enum, "
                     "booleans or null (whose repeats can be told apart while writing)");
      if (values) {
        std::vector<ojson> both;
        for (const ojson &v : *values)
          if (std::find(listed->begin(), listed->end(), v) != listed->end())
            both.push_back(v);
        listed = std::move(both);
      }
      values = std::move(listed);
    }
    if (!values)
      refuse(path, "'uniqueItems' is supported only for items that are a const, an enum, "
                   "booleans or null (whose repeats can be told apart while writing)");
    std::vector<ojson> distinct;
    for (const ojson &v : *values)
      if (std::find(distinct.begin(), distinct.end(), v) == distinct.end())
        distinct.push_back(v);
    if (distinct.size() > kMaxDistinctChoices)
      refuse(path, fmt::format("'uniqueItems' over {} values (at most {})", distinct.size(),
                               kMaxDistinctChoices));
    if (static_cast<size_t>(min) > distinct.size())
      refuse(path, fmt::format("'minItems' {} but only {} distinct items exist: nothing matches",
                               min, distinct.size()));
    std::vector<int32_t> choices;
    for (const ojson &v : distinct)
      choices.push_back(seq({ws_, literals({v}, path)}));
    --containers_;
    Node rep;
    rep.kind = NodeKind::repeat;
    rep.distinct = true;
    Node choice; // an alt even with one kid: the matcher takes its kids one by one
    choice.kind = NodeKind::alt;
    choice.kids = std::move(choices);
    rep.kids = {add(std::move(choice)), seq({ws_, literal(",")})};
    rep.min = static_cast<int32_t>(min);
    rep.max = static_cast<int32_t>(max < 0 ? static_cast<int64_t>(distinct.size())
                                           : std::min<int64_t>(max, distinct.size()));
    const int32_t open = literal("[");
    const int32_t body = add(std::move(rep));
    return seq({open, body, seq({ws_, literal("]")})});
  }
  const int32_t rest = rest_schemas && (max < 0 || max > static_cast<int64_t>(heads.size()))
                           ? all_of(*rest_schemas, depth + 1)
                           : -1;
  --containers_;
  const int32_t open = literal("[");
  const int32_t close = seq({ws_, literal("]")});
  if (heads.empty()) {
    if (rest < 0)
      return seq({open, close}); // no item at all
    Node rep;
    rep.kind = NodeKind::repeat;
    rep.kids = {seq({ws_, rest}), seq({ws_, literal(",")})};
    rep.min = static_cast<int32_t>(min);
    rep.max = static_cast<int32_t>(max);
    const int32_t body = add(std::move(rep));
    return seq({open, body, close});
  }
  // After the prefix: more items, each with its comma.
  const auto n = static_cast<int64_t>(heads.size());
  int32_t tail = seq({});
  if (rest >= 0) {
    Node rep;
    rep.kind = NodeKind::repeat;
    rep.kids = {seq({ws_, literal(","), ws_, rest})};
    rep.min = static_cast<int32_t>(std::max<int64_t>(0, min - n));
    rep.max = static_cast<int32_t>(max < 0 ? -1 : max - n);
    tail = add(std::move(rep));
  }
  // Backwards through the prefix: after i items, stop (when allowed) or
  // write item i and go on.
  for (int64_t i = n - 1; i >= 0; --i) {
    const int32_t item = i == 0 ? seq({ws_, heads[0]})
                                : seq({ws_, literal(","), ws_, heads[static_cast<size_t>(i)]});
    const int32_t go_on = seq({item, tail});
    tail = i >= min ? alt({seq({}), go_on}) : go_on;
  }
  return seq({open, tail, close});
}

} // namespace bonsai::constrain

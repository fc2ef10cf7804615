// Numbers: bounds, multipleOf and the OpenAPI number formats become the
// language of the number's text; without them the plain number lexer reads
// any JSON number.
#include <cmath>

#include <fmt/format.h>

#include "formats.hpp"
#include "number_language.hpp"
#include "schema_compiler.hpp"

namespace bonsai::constrain {
namespace {

Decimal decimal_of(const ojson &v, const char *keyword, const std::string &path) {
  if (!v.is_number() || (v.is_number_float() && !std::isfinite(v.get<double>())))
    refuse(path, fmt::format("'{}' must be a number", keyword));
  try {
    return parse_decimal(v.dump());
  } catch (const std::invalid_argument &) {
    refuse(path, fmt::format("'{}' must be a number of a usable size", keyword));
  }
}

} // namespace

int32_t SchemaCompiler::number(const Parts &parts, bool integer) {
  NumberSpec spec;
  spec.integer = integer;
  bool constrained = false;
  for (const Part &part : parts) {
    const ojson &s = *part.schema;
    for (const char *keyword : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      const auto it = s.find(keyword);
      if (it == s.end())
        continue;
      if (it->is_boolean())
        refuse(part.path, fmt::format("'{}' as a boolean (draft 4) is not supported; give the "
                                      "bound itself",
                                      keyword));
      const std::string_view k = keyword;
      const Bound b{decimal_of(*it, keyword, part.path), k.starts_with("exclusive")};
      (k.ends_with("inimum") ? spec.lower : spec.upper).push_back(b);
      constrained = true;
    }
    if (const auto it = s.find("multipleOf"); it != s.end()) {
      const Decimal step = decimal_of(*it, "multipleOf", part.path);
      if (step.negative || compare(step, Decimal{}) == 0)
        refuse(part.path, "'multipleOf' must be above 0");
      spec.steps.push_back(step);
      constrained = true;
    }
    if (const auto it = s.find("format"); it != s.end()) {
      const auto known = it->is_string() ? number_format(it->get<std::string>()) : std::nullopt;
      if (!known && it->is_string() && string_format(it->get<std::string>()))
        continue; // a string format: it applies to strings only
      if (!known)
        refuse(part.path,
               fmt::format("the format {} is not supported for numbers (supported: int32, "
                           "int64, float, double)",
                           it->dump()));
      if (known->integer && !spec.integer) {
        spec.integer = true;
        constrained = true;
      }
      if (known->bounded) {
        spec.lower.push_back({parse_decimal(std::to_string(known->min)), false});
        spec.upper.push_back({parse_decimal(std::to_string(known->max)), false});
        constrained = true;
      }
    }
  }
  Node n;
  n.kind = NodeKind::number;
  n.integer = spec.integer;
  if (constrained) {
    const std::string &path = parts.front().path;
    const StateBudget budget{static_cast<size_t>(limits_.max_pattern_states),
                             "the number's bounds"};
    std::string key = spec.integer ? "integer" : "number";
    for (const Bound &b : spec.lower)
      key += fmt::format(" >{}{}", b.strict ? "" : "=", to_string(b.value));
    for (const Bound &b : spec.upper)
      key += fmt::format(" <{}{}", b.strict ? "" : "=", to_string(b.value));
    for (const Decimal &step : spec.steps)
      key += " %" + to_string(step);
    if (const auto it = automaton_memo_.find(key); it != automaton_memo_.end()) {
      n.automaton = it->second;
    } else {
      try {
        n.automaton = add_automaton(key, number_language(spec, budget), {}, path);
      } catch (const std::invalid_argument &e) {
        refuse(path, e.what());
      }
    }
  }
  return add(std::move(n));
}

} // namespace bonsai::constrain

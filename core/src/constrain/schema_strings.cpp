// Strings: lengths, patterns and formats, intersected into one automaton
// when more than a length is asked.
#include <fmt/format.h>

#include "formats.hpp"
#include "regex_parser.hpp"
#include "schema_compiler.hpp"

namespace bonsai::constrain {

SchemaCompiler::StringLanguage
SchemaCompiler::string_language(const Parts &parts, const std::vector<std::string> &excluded,
                                const std::string &path) {
  StringLanguage out;
  int64_t min = 0, max = -1;
  std::vector<Found> patterns, formats;
  for (const Part &part : parts) {
    const ojson &s = *part.schema;
    min = std::max(min, count_field(s, "minLength", part.path, 0));
    if (const int64_t m = count_field(s, "maxLength", part.path, -1); m >= 0)
      max = max < 0 ? m : std::min(max, m);
    if (const auto p = s.find("pattern"); p != s.end()) {
      if (!p->is_string())
        refuse(part.path, "'pattern' must be a string");
      patterns.push_back({&*p, part.path});
    }
    if (const auto f = s.find("format"); f != s.end()) {
      if (!f->is_string())
        refuse(part.path, "'format' must be a string");
      formats.push_back({&*f, part.path});
    }
  }
  std::vector<std::pair<std::string, std::string>> languages; // pattern, path
  for (const Found &f : formats) {
    const std::string name = f.value->get<std::string>();
    const auto known = string_format(name);
    if (!known && number_format(name))
      continue; // a number format: it applies to numbers only
    if (!known) {
      // zod writes its own format names (cuid, nanoid, ...) beside a pattern
      // that says what they mean; the pattern decides then.
      if (!patterns.empty())
        continue;
      std::string names;
      for (const std::string &n : known_string_formats())
        names += (names.empty() ? "" : ", ") + n;
      refuse(f.path, fmt::format("the format '{}' is not supported (supported: {})", name, names));
    }
    if (known->max_chars >= 0)
      max = max < 0 ? known->max_chars : std::min<int64_t>(max, known->max_chars);
    if (!known->pattern.empty())
      languages.push_back({known->pattern, f.path});
  }
  for (const Found &p : patterns)
    languages.push_back({p.value->get<std::string>(), p.path});
  if (max >= 0 && max < min)
    refuse(path, "'maxLength' is below 'minLength': nothing matches");
  out.window = {static_cast<int32_t>(min), static_cast<int32_t>(max)};
  if (languages.empty() && excluded.empty())
    return out;
  out.key = fmt::format("string {} {}", min, max);
  for (const auto &[pattern, at] : languages)
    out.key += "\x1f" + pattern;
  out.key += "\x1e";
  for (const std::string &name : excluded)
    out.key += "\x1f" + name;
  if (const auto it = string_memo_.find(out.key); it != string_memo_.end())
    return it->second;
  out.constrained = true;
  const StateBudget budget{static_cast<size_t>(limits_.max_pattern_states),
                           languages.size() > 1 ? "the string's patterns and formats together"
                                                : "the pattern"};
  std::string where = path;
  try {
    out.language = compile_language(any_text(), budget);
    for (const auto &[pattern, at] : languages) {
      where = at;
      const ParsedPattern parsed = parse_pattern(pattern);
      out.language = intersect(out.language, compile_language(parsed.ast, budget), budget);
      out.window.min_chars = std::max(out.window.min_chars, parsed.min_chars);
      if (parsed.max_chars >= 0)
        out.window.max_chars = out.window.max_chars < 0
                                   ? parsed.max_chars
                                   : std::min(out.window.max_chars, parsed.max_chars);
    }
    if (out.window.max_chars >= 0 && out.window.max_chars < out.window.min_chars)
      refuse(path, "the pattern's length and 'minLength'/'maxLength' leave no length");
    if (!excluded.empty())
      out.language = intersect(out.language, all_but(excluded), budget);
    // A deterministic automaton steps one state at a time: use it when it
    // is not much bigger.
    if (auto dfa = try_determinize(out.language, out.language.nodes.size() * 2 + 64, false)) {
      auto min_dfa = try_minimize(*dfa, budget.max_states * 256);
      if (min_dfa && min_dfa->nodes.size() <= out.language.nodes.size() * 2)
        out.language = std::move(*min_dfa);
    }
  } catch (const std::invalid_argument &e) {
    refuse(where, e.what());
  }
  if (out.language.empty())
    refuse(path, languages.size() > 1 ? "no string matches all its patterns and formats"
                                      : "the pattern matches no string a JSON value can hold "
                                        "without escapes");
  string_memo_[out.key] = out;
  return out;
}

int32_t SchemaCompiler::string(const Parts &parts) {
  return string_node(parts, {}, parts.front().path);
}

int32_t SchemaCompiler::string_node(const Parts &parts, const std::vector<std::string> &excluded,
                                    const std::string &path) {
  StringLanguage lang = string_language(parts, excluded, path);
  Node n;
  n.kind = NodeKind::string;
  n.min = lang.window.min_chars;
  n.max = lang.window.max_chars;
  if (lang.constrained)
    n.automaton = add_automaton(lang.key, lang.language, lang.window, path);
  return add(std::move(n));
}

} // namespace bonsai::constrain

// Range arithmetic and the tree constructors.
#include "regex_ast.hpp"

#include <algorithm>

namespace bonsai::constrain {
namespace {

// What a JSON string can hold without an escape, in valid UTF-8.
const Ranges kJsonPlain = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, kMaxCodepoint}};

} // namespace

Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end(), [](auto a, auto b) { return a.lo < b.lo; });
  Ranges out;
  for (const auto &x : r) {
    if (x.lo > x.hi)
      continue;
    if (!out.empty() && x.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, x.hi);
    else
      out.push_back(x);
  }
  return out;
}

Ranges complement(const Ranges &sorted) {
  Ranges out;
  uint32_t next = 0;
  for (const auto &x : sorted) {
    if (x.lo > next)
      out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= kMaxCodepoint)
    out.push_back({next, kMaxCodepoint});
  return out;
}

Ranges intersect(const Ranges &a, const Ranges &b) {
  Ranges out;
  // Both sorted and disjoint: one merge pass.
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t lo = std::max(a[i].lo, b[j].lo), hi = std::min(a[i].hi, b[j].hi);
    if (lo <= hi)
      out.push_back({lo, hi});
    if (a[i].hi < b[j].hi)
      ++i;
    else
      ++j;
  }
  return out;
}

bool in_ranges(const Ranges &ranges, uint32_t cp) {
  for (const auto &r : ranges)
    if (cp >= r.lo && cp <= r.hi)
      return true;
  return false;
}

int utf8_length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

RegexAst chars_of(Ranges r) {
  RegexAst a;
  a.kind = RegexAst::Kind::chars;
  a.ranges = intersect(normalize(std::move(r)), kJsonPlain);
  return a;
}

RegexAst text_of(std::string_view ascii) {
  std::vector<RegexAst> kids;
  for (const char c : ascii)
    kids.push_back(chars_of({{static_cast<uint8_t>(c), static_cast<uint8_t>(c)}}));
  return concat_of(std::move(kids));
}

RegexAst concat_of(std::vector<RegexAst> kids) {
  if (kids.size() == 1)
    return std::move(kids[0]);
  RegexAst a;
  a.kind = RegexAst::Kind::concat;
  a.kids = std::move(kids);
  return a;
}

RegexAst alt_of(std::vector<RegexAst> kids) {
  if (kids.size() == 1)
    return std::move(kids[0]);
  RegexAst a;
  a.kind = RegexAst::Kind::alt;
  a.kids = std::move(kids);
  return a;
}

RegexAst repeat_of(RegexAst kid, int32_t min, int32_t max) {
  RegexAst a;
  a.kind = RegexAst::Kind::repeat;
  a.min = min;
  a.max = max;
  a.kids.push_back(std::move(kid));
  return a;
}

RegexAst any_text() {
  return repeat_of(chars_of({{0, kMaxCodepoint}}), 0, -1);
}

} // namespace bonsai::constrain

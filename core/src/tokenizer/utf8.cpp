#include "utf8.hpp"

namespace bonsai::tokenizer_detail {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

bool is_continuation(unsigned char c) {
  return c >= 0x80 && c <= 0xBF;
}

struct LeadRule {
  size_t length;               // total bytes of the character
  unsigned char second_lo = 0; // allowed range of the second byte (Table 3-7)
  unsigned char second_hi = 0;
};

// Table 3-7 of the Unicode standard: the second byte's range depends on the
// lead byte so that overlongs, surrogates and values past U+10FFFF are rejected.
LeadRule lead_rule(unsigned char c) {
  if (c < 0x80)
    return {1};
  if (c >= 0xC2 && c <= 0xDF)
    return {2, 0x80, 0xBF};
  if (c == 0xE0)
    return {3, 0xA0, 0xBF};
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
    return {3, 0x80, 0xBF};
  if (c == 0xED)
    return {3, 0x80, 0x9F};
  if (c == 0xF0)
    return {4, 0x90, 0xBF};
  if (c >= 0xF1 && c <= 0xF3)
    return {4, 0x80, 0xBF};
  if (c == 0xF4)
    return {4, 0x80, 0x8F};
  return {0}; // 0x80..0xC1, 0xF5..0xFF never start a character
}

} // namespace

Utf8Step utf8_step(std::string_view text) {
  const auto *p = reinterpret_cast<const unsigned char *>(text.data());
  const LeadRule rule = lead_rule(p[0]);
  if (rule.length == 0)
    return {Utf8Status::Invalid, 1};
  if (rule.length == 1)
    return {Utf8Status::Valid, 1};
  for (size_t i = 1; i < rule.length; ++i) {
    if (i >= text.size())
      return {Utf8Status::Truncated, i};
    const bool ok =
        i == 1 ? (p[1] >= rule.second_lo && p[1] <= rule.second_hi) : is_continuation(p[i]);
    if (!ok)
      return {Utf8Status::Invalid, i};
  }
  return {Utf8Status::Valid, rule.length};
}

size_t find_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // ASCII dominates real text: skip it without the table lookup.
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step step = utf8_step(text.substr(i));
    if (step.status != Utf8Status::Valid)
      return i;
    i += step.length;
  }
  return std::string_view::npos;
}

size_t append_sanitized_utf8(std::string_view bytes, bool final, std::string &out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const Utf8Step step = utf8_step(bytes.substr(i));
    switch (step.status) {
    case Utf8Status::Valid:
      out.append(bytes.substr(i, step.length));
      break;
    case Utf8Status::Invalid:
      out.append(kReplacement);
      break;
    case Utf8Status::Truncated:
      if (!final)
        return i;
      out.append(kReplacement);
      break;
    }
    i += step.length;
  }
  return i;
}

} // namespace bonsai::tokenizer_detail

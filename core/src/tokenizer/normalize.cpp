#include "normalize.hpp"

#include <array>
#include <cstdlib>
#include <memory>
#include <utf8proc.h>

#include "bonsai/core/error.hpp"

namespace bonsai::tokenizer_detail {

namespace {

// Sorted, disjoint. Gaps are deliberate: U+0300.. (combining marks, Greek and
// Cyrillic singletons), U+2000/U+2001 (singleton decompositions), U+302A..F
// and U+3099/U+309A (combining marks), CJK compatibility ideographs, ...
constexpr std::array<CodePointRange, 15> kInert = {{
    {0x0000, 0x02FF},   // ASCII, Latin-1, Latin Extended, IPA, spacing modifiers
    {0x2002, 0x206F},   // General Punctuation (after the two quads)
    {0x20A0, 0x20BF},   // Currency Symbols
    {0x2600, 0x27BF},   // Miscellaneous Symbols, Dingbats
    {0x3000, 0x3029},   // CJK Symbols and Punctuation, before the tone marks
    {0x3030, 0x303F},   //   ... after them
    {0x3041, 0x3096},   // Hiragana
    {0x309B, 0x30FF},   // spacing sound marks, Katakana
    {0x3400, 0x4DBF},   // CJK Unified Ideographs Extension A
    {0x4E00, 0x9FFF},   // CJK Unified Ideographs
    {0xAC00, 0xD7A3},   // Hangul Syllables
    {0xFE00, 0xFE0F},   // Variation Selectors (emoji presentation)
    {0xFF01, 0xFFEF},   // Halfwidth and Fullwidth Forms
    {0x1F300, 0x1F5FF}, // Miscellaneous Symbols and Pictographs
    {0x1F600, 0x1FAFF}, // Emoticons .. Symbols and Pictographs Extended-A
}};

bool is_inert(char32_t cp) {
  // Binary search would do, but ASCII and the first ranges dominate.
  for (const CodePointRange &r : kInert) {
    if (cp < r.first)
      return false;
    if (cp <= r.last)
      return true;
  }
  return false;
}

} // namespace

std::span<const CodePointRange> nfc_inert_ranges() {
  return kInert;
}

bool may_need_nfc(std::string_view text) {
  const auto *p = reinterpret_cast<const unsigned char *>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char lead = p[i];
    // Every byte below 0xCC leads (or continues) a code point below U+0300.
    if (lead < 0xCC) {
      ++i;
      continue;
    }
    // Valid UTF-8 is guaranteed: decode the 2-4 byte sequence.
    char32_t cp;
    if (lead < 0xE0) {
      cp = ((lead & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
      i += 2;
    } else if (lead < 0xF0) {
      cp = ((lead & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
      i += 3;
    } else {
      cp = ((lead & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) | ((p[i + 2] & 0x3Fu) << 6) |
           (p[i + 3] & 0x3Fu);
      i += 4;
    }
    if (!is_inert(cp))
      return true;
  }
  return false;
}

std::string nfc(std::string_view text) {
  if (!may_need_nfc(text))
    return std::string(text);
  utf8proc_uint8_t *raw = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &raw,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  // utf8proc allocates with malloc; free it however we leave.
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(raw, &std::free);
  if (n < 0)
    throw Error(std::string("tokenizer: NFC normalization failed: ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char *>(raw), static_cast<size_t>(n));
}

} // namespace bonsai::tokenizer_detail

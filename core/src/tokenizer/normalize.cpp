#include "normalize.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utf8proc.h>
#include <vector>

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

[[noreturn]] void fail(utf8proc_ssize_t code) {
  throw Error(std::string("tokenizer: NFC normalization failed: ") + utf8proc_errmsg(code));
}

// The longest canonical decomposition in Unicode has 4 code points.
constexpr utf8proc_ssize_t kMaxDecomposition = 8;

// Canonical decomposition of every code point, in text order. Code point by
// code point on purpose: utf8proc_decompose() would also put the marks in
// order with a bubble sort, quadratic in a run of marks.
std::vector<utf8proc_int32_t> decompose(std::string_view text) {
  std::vector<utf8proc_int32_t> out;
  out.reserve(text.size());
  const auto *p = reinterpret_cast<const utf8proc_uint8_t *>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t i = 0;
  while (i < size) {
    utf8proc_int32_t cp = -1;
    const utf8proc_ssize_t used = utf8proc_iterate(p + i, size - i, &cp);
    if (used < 0)
      fail(used);
    i += used;
    utf8proc_int32_t parts[kMaxDecomposition];
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n =
        utf8proc_decompose_char(cp, parts, kMaxDecomposition, UTF8PROC_DECOMPOSE, &boundclass);
    if (n < 0)
      fail(n);
    if (n > kMaxDecomposition)
      fail(UTF8PROC_ERROR_OVERFLOW);
    out.insert(out.end(), parts, parts + n);
  }
  return out;
}

int combining_class(utf8proc_int32_t cp) {
  return utf8proc_get_property(cp)->combining_class;
}

// Canonical ordering: each run of non-starters sorted by combining class,
// keeping the order of equal classes. A stable sort gives the same result as
// the adjacent swaps of the Unicode algorithm in O(n log n).
void order_marks(std::vector<utf8proc_int32_t> &cps) {
  const auto by_class = [](utf8proc_int32_t a, utf8proc_int32_t b) {
    return combining_class(a) < combining_class(b);
  };
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < cps.size() && combining_class(cps[end]) != 0)
      ++end;
    const auto first = cps.begin() + static_cast<std::ptrdiff_t>(i);
    const auto last = cps.begin() + static_cast<std::ptrdiff_t>(end);
    if (!std::is_sorted(first, last, by_class))
      std::stable_sort(first, last, by_class);
    i = end;
  }
}

// Hangul syllable arithmetic (Unicode 15, section 3.12).
constexpr utf8proc_int32_t kLBase = 0x1100;
constexpr utf8proc_int32_t kVBase = 0x1161;
constexpr utf8proc_int32_t kTBase = 0x11A7;
constexpr utf8proc_int32_t kSBase = 0xAC00;
constexpr utf8proc_int32_t kLCount = 19;
constexpr utf8proc_int32_t kVCount = 21;
constexpr utf8proc_int32_t kTCount = 28;
constexpr utf8proc_int32_t kSCount = kLCount * kVCount * kTCount;

// The primary composite of `starter` followed by `next`, or -1.
utf8proc_int32_t compose_pair(utf8proc_int32_t starter, utf8proc_int32_t next) {
  const utf8proc_int32_t l = starter - kLBase;
  if (l >= 0 && l < kLCount) {
    const utf8proc_int32_t v = next - kVBase;
    return v >= 0 && v < kVCount ? kSBase + (l * kVCount + v) * kTCount : -1;
  }
  const utf8proc_int32_t s = starter - kSBase;
  if (s >= 0 && s < kSCount) {
    // t == 0 is U+11A7, not a trailing consonant: utf8proc 2.8 would
    // swallow it, Unicode (and Hugging Face) keep it.
    const utf8proc_int32_t t = next - kTBase;
    return s % kTCount == 0 && t > 0 && t < kTCount ? starter + t : -1;
  }
  // utf8proc has no pair lookup in its API; composing the pair alone reaches
  // its table, which leaves out the composition exclusions.
  utf8proc_int32_t pair[2] = {starter, next};
  const utf8proc_ssize_t n = utf8proc_normalize_utf32(
      pair, 2, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  return n == 1 ? pair[0] : -1;
}

// Canonical composition (UAX #15) of canonically ordered text, in place, in
// one pass. A character is blocked from the last starter when a character
// kept between them has class 0 or a class not below its own; with ordered
// input that is "the highest class kept since the starter".
void compose(std::vector<utf8proc_int32_t> &cps) {
  constexpr size_t kNone = ~size_t{0};
  size_t starter = kNone; // index of the last starter in the output
  int kept_class = -1;    // highest class kept since it; -1 while none
  size_t out = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    const utf8proc_int32_t cp = cps[i];
    const int cc = combining_class(cp);
    // Inert code points are never the second half of a composition.
    if (starter != kNone && kept_class < cc && !is_inert(static_cast<char32_t>(cp))) {
      if (const utf8proc_int32_t composite = compose_pair(cps[starter], cp); composite >= 0) {
        cps[starter] = composite;
        continue;
      }
    }
    cps[out] = cp;
    if (cc == 0) {
      starter = out;
      kept_class = -1;
    } else {
      kept_class = std::max(kept_class, cc);
    }
    ++out;
  }
  cps.resize(out);
}

std::string encode_utf8(std::span<const utf8proc_int32_t> cps) {
  std::string out;
  out.reserve(cps.size() * 2);
  utf8proc_uint8_t bytes[4];
  for (const utf8proc_int32_t cp : cps) {
    const utf8proc_ssize_t n = utf8proc_encode_char(cp, bytes);
    out.append(reinterpret_cast<const char *>(bytes), static_cast<size_t>(n));
  }
  return out;
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
  std::vector<utf8proc_int32_t> code_points = decompose(text);
  order_marks(code_points);
  compose(code_points);
  return encode_utf8(code_points);
}

} // namespace bonsai::tokenizer_detail

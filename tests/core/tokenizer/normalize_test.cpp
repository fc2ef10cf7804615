// White-box check of the NFC shortcut (core/src/tokenizer/normalize.hpp):
// every code point the tokenizer treats as "NFC-inert" must really be left
// alone by NFC in any context, according to utf8proc's Unicode data.
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <utf8proc.h>

#include "../../../core/src/tokenizer/normalize.hpp"
#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

using tokenizer_detail::may_need_nfc;
using tokenizer_detail::nfc_inert_ranges;

bool listed_inert(char32_t cp) {
  for (const auto &r : nfc_inert_ranges())
    if (cp >= r.first && cp <= r.last)
      return true;
  return false;
}

std::string utf8(char32_t cp) {
  utf8proc_uint8_t buffer[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buffer);
  return std::string(reinterpret_cast<const char *>(buffer), static_cast<size_t>(n));
}

TEST(NfcInertRanges, AreSortedAndDisjoint) {
  const auto ranges = nfc_inert_ranges();
  ASSERT_FALSE(ranges.empty());
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i].first, ranges[i].last);
    if (i > 0) {
      EXPECT_LT(ranges[i - 1].last, ranges[i].first);
    }
  }
}

TEST(NfcInertRanges, EachCodePointIsAStableStarter) {
  // Combining class 0 (never reordered) and unchanged by NFC on its own (no
  // singleton decomposition, no composition exclusion).
  for (const auto &r : nfc_inert_ranges()) {
    for (char32_t cp = r.first; cp <= r.last; ++cp) {
      ASSERT_EQ(utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class, 0)
          << std::hex << static_cast<uint32_t>(cp);
      const std::string s = utf8(cp);
      ASSERT_EQ(nfc(s), s) << std::hex << static_cast<uint32_t>(cp);
    }
  }
}

TEST(NfcInertRanges, NoneIsTheSecondPartOfAComposition) {
  // Anything after the first code point of a canonical decomposition can
  // combine with what precedes it; none of those may be listed as inert.
  // Hangul syllables are included: they decompose to L V (T) jamo.
  size_t composites = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF)
      continue;
    utf8proc_int32_t parts[32];
    int boundclass = 0;
    const utf8proc_ssize_t n =
        utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), parts, 32,
                                static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE), &boundclass);
    ASSERT_GE(n, 1);
    if (n < 2)
      continue;
    ++composites;
    for (utf8proc_ssize_t k = 1; k < n; ++k)
      ASSERT_FALSE(listed_inert(static_cast<char32_t>(parts[k])))
          << std::hex << "U+" << parts[k] << " (from U+" << static_cast<uint32_t>(cp) << ")";
  }
  EXPECT_GT(composites, 11172u); // at least every Hangul syllable was seen
}

TEST(NfcShortcut, DetectsTextThatMayChange) {
  EXPECT_FALSE(may_need_nfc("plain ASCII, caf\xC3\xA9"));
  EXPECT_FALSE(may_need_nfc("\xE4\xB8\xAD\xE6\x96\x87 \xED\x95\x9C \xF0\x9F\x8C\xB1"));
  EXPECT_TRUE(may_need_nfc("e\xCC\x81"));    // combining acute
  EXPECT_TRUE(may_need_nfc("\xE1\x84\x80")); // Hangul jamo
  EXPECT_TRUE(may_need_nfc("\xE2\x80\x80")); // U+2000 EN QUAD (singleton)
  EXPECT_TRUE(may_need_nfc("\xEF\xA4\x80")); // U+F900 CJK compatibility ideograph
  EXPECT_TRUE(may_need_nfc("\xE3\x82\x99")); // U+3099 combining voiced mark
  EXPECT_TRUE(may_need_nfc("\xCD\xBE"));     // U+037E Greek question mark
}

} // namespace
} // namespace bonsai::test

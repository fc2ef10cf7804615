// NFC (core/src/tokenizer/normalize.hpp) against hand-written expectations and
// against utf8proc_map, the implementation it replaced.
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <utf8proc.h>
#include <vector>

#include "../../../core/src/tokenizer/normalize.hpp"
#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

std::string utf8(std::u32string_view cps) {
  std::string out;
  for (const char32_t cp : cps) {
    utf8proc_uint8_t buffer[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buffer);
    out.append(reinterpret_cast<const char *>(buffer), static_cast<size_t>(n));
  }
  return out;
}

std::string ours(std::u32string_view cps) {
  return tokenizer_detail::nfc(utf8(cps));
}

TEST(Nfc, ComposesAndOrdersHandPickedCases) {
  struct Case {
    std::u32string input;
    std::u32string expected;
  };
  const std::vector<Case> cases = {
      {U"e\u0301", U"\u00E9"},
      {U"e\u0301\u0301", U"\u00E9\u0301"},            // the second acute is blocked by the first
      {U"e\u0302\u0301", U"\u1EBF"},                  // composed marks block nothing
      {U"a\u0301\u0316", U"\u00E1\u0316"},            // grave below (220) sorts before acute (230)
      {U"a\u0316\u0301", U"\u00E1\u0316"},            // the lower class does not block
      {U"\u1E0B\u0323", U"\u1E0D\u0307"},             // UAX #15's example
      {U"\u212B", U"\u00C5"},                         // ANGSTROM SIGN: singleton
      {U"\u2126", U"\u03A9"},                         // OHM SIGN: singleton
      {U"A\u030A\u0301", U"\u01FA"},                  // A ring, then acute on the composite
      {U"\u0958", U"\u0915\u093C"},                   // composition exclusion
      {U"\u0915\u093C", U"\u0915\u093C"},             //   stays decomposed
      {U"\uFB1D", U"\u05D9\u05B4"},                   // Hebrew exclusion
      {U"\u0344", U"\u0308\u0301"},                   // non-starter decomposition
      {U"\u0F73", U"\u0F71\u0F72"},                   // excluded non-starter decomposition
      {U"\u0CC6\u0CC2", U"\u0CCA"},                   // class-0 second character, adjacent
      {U"\u0CC6\u0334\u0CC2", U"\u0CC6\u0334\u0CC2"}, // ... blocked by any mark
      {U"\u1100\u1161", U"\uAC00"},                   // Hangul L V
      {U"\u1100\u1161\u11A8", U"\uAC01"},             // Hangul L V T
      {U"\uAC00\u11A8", U"\uAC01"},                   // LV syllable + T
      {U"\uAC01\u11A8", U"\uAC01\u11A8"},             // LVT takes no second T
      {U"\u1100\u0301\u1161", U"\u1100\u0301\u1161"}, // V blocked by a mark
      {U"\uAC00\u11A7", U"\uAC00\u11A7"},             // U+11A7 is no trailing consonant
      {U"\u0301e", U"\u0301e"},                       // a leading mark has no starter
      {U"\u00E9", U"\u00E9"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(ours(c.input), utf8(c.expected)) << testing::PrintToString(utf8(c.input));
}

// Code points that exercise every step: starters that compose, marks of
// several classes, class-0 characters that compose, precomposed letters with
// singleton and multi-level decompositions, exclusions, Hangul, ASCII.
// U+11A7 is left out: utf8proc 2.8 drops it after an LV syllable (see above).
const std::vector<char32_t> &interesting_code_points() {
  static const std::vector<char32_t> pool = {
      'a',    'e',    'o',    'A',    'd',    's',     ' ',     'x',     0x03B1,  0x03A9, 0x0300,
      0x0301, 0x0302, 0x0308, 0x030A, 0x0313, 0x0316,  0x0323,  0x0327,  0x031B,  0x0334, 0x0345,
      0x05B0, 0x05B4, 0x093C, 0x0F71, 0x0F72, 0x0F74,  0x302A,  0x3099,  0x0CC6,  0x0CC2, 0x0CBF,
      0x0CD5, 0x0B47, 0x0B3E, 0x0DD9, 0x0DCF, 0x09C7,  0x09BE,  0x00E9,  0x00C5,  0x00DC, 0x01D5,
      0x1E0B, 0x1E0D, 0x1E69, 0x1EA0, 0x1F82, 0x1EBF,  0x212B,  0x2126,  0x2000,  0xF900, 0x0344,
      0x0958, 0x0915, 0xFB1D, 0x05D9, 0x0F73, 0x1D15E, 0x1D157, 0x1D165, 0x1100,  0x1112, 0x1161,
      0x1175, 0x11A8, 0x11C2, 0xAC00, 0xAC01, 0xD7A3,  0x304B,  0x4E2D,  0x1F600,
  };
  return pool;
}

std::u32string random_text(std::mt19937 &rng, size_t max_length) {
  const auto &pool = interesting_code_points();
  std::u32string text(rng() % (max_length + 1), U'\0');
  for (char32_t &cp : text)
    cp = pool[rng() % pool.size()];
  return text;
}

TEST(Nfc, EqualsUtf8procOnRandomShortText) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 50000; ++round) {
    const std::string text = utf8(random_text(rng, 10));
    ASSERT_EQ(tokenizer_detail::nfc(text), nfc(text)) << testing::PrintToString(text);
  }
}

TEST(Nfc, EqualsUtf8procOnRandomLongerText) {
  std::mt19937 rng(99);
  for (int round = 0; round < 3000; ++round) {
    const std::string text = utf8(random_text(rng, 64));
    ASSERT_EQ(tokenizer_detail::nfc(text), nfc(text)) << testing::PrintToString(text);
  }
}

TEST(Nfc, LongRunOfMarksInReverseClassOrder) {
  // 100,000 acutes (class 230) then 100,000 graves below (220) after one
  // 'a': canonical order puts every grave below first, then the first acute
  // composes with the 'a' (only lower classes stand between) and blocks the
  // rest. Adjacent swaps, as utf8proc does them, would need 10^10 steps.
  constexpr size_t kEach = 100000;
  const std::u32string input =
      U"a" + std::u32string(kEach, U'\u0301') + std::u32string(kEach, U'\u0316');
  const std::u32string expected =
      U"\u00E1" + std::u32string(kEach, U'\u0316') + std::u32string(kEach - 1, U'\u0301');
  EXPECT_EQ(ours(input), utf8(expected));
}

TEST(Nfc, LongRunOfAlternatingClasses) {
  // acute, grave below, acute, ... : the same multiset as above, interleaved.
  constexpr size_t kPairs = 100000;
  std::u32string input = U"a";
  for (size_t i = 0; i < kPairs; ++i)
    input += U"\u0301\u0316";
  const std::u32string expected =
      U"\u00E1" + std::u32string(kPairs, U'\u0316') + std::u32string(kPairs - 1, U'\u0301');
  EXPECT_EQ(ours(input), utf8(expected));
}

} // namespace
} // namespace bonsai::test

// The ECMA-262 syntax that schema generators write: anchors on top-level
// alternatives, look-aheads (zod's duration and hostname, Pydantic's
// Decimal), code point escapes; patterns together with length limits, with
// the shortest completion worked out by hand.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "grammar_test_support.hpp"

namespace bonsai {
namespace {

using test::matches;
using test::prefix_ok;
using test::random_text;

Grammar pattern(const std::string &p, const std::string &more = "") {
  return Grammar::json_schema(R"({"type":"string","pattern":)" + nlohmann::json(p).dump() + more +
                              "}");
}

std::string quoted(const std::string &s) {
  return "\"" + s + "\"";
}

std::string refusal(const std::string &p) {
  try {
    (void)pattern(p);
  } catch (const Error &e) {
    return e.what();
  }
  return "accepted";
}

TEST(Patterns, AnchorsOnEachTopLevelAlternative) {
  // zod's base64: the empty string, or groups of four with padding.
  const Grammar b64 =
      pattern(R"(^$|^(?:[0-9a-zA-Z+/]{4})*(?:(?:[0-9a-zA-Z+/]{2}==)|(?:[0-9a-zA-Z+/]{3}=))?$)");
  for (const char *ok : {"", "QUJD", "QUI=", "QQ==", "QUJDRA=="})
    EXPECT_TRUE(matches(b64, quoted(ok))) << ok;
  for (const char *bad : {"Q", "QUJ", "QUJD=", "Q===", "QUJD!"})
    EXPECT_FALSE(matches(b64, quoted(bad))) << bad;
  // One alternative anchored at the start only, the other at the end only.
  const Grammar mixed = pattern("^ab|cd$");
  EXPECT_TRUE(matches(mixed, quoted("abxx")));
  EXPECT_TRUE(matches(mixed, quoted("xxcd")));
  EXPECT_FALSE(matches(mixed, quoted("xabx")));
  EXPECT_NE(refusal("a^b").find("'^' and '$'"), std::string::npos);
  EXPECT_NE(refusal("(^a)").find("'^' and '$'"), std::string::npos);
}

TEST(Patterns, LookAheads) {
  // zod's ISO duration: look-aheads after P and after T.
  const Grammar dur = pattern(
      R"(^P(?:(\d+W)|(?!.*W)(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+([.,]\d+)?S)?)?)$)");
  for (const char *ok : {"P3W", "P1Y", "PT1H", "P1DT2.5S", "P1Y2M3DT4H5M6S"})
    EXPECT_TRUE(matches(dur, quoted(ok))) << ok;
  for (const char *bad : {"P", "PT", "P1DT", "P1Y2W", "PW"})
    EXPECT_FALSE(matches(dur, quoted(bad))) << bad;
  EXPECT_TRUE(prefix_ok(dur, "\"PT")); // "PT" may go on with a digit
  EXPECT_FALSE(prefix_ok(dur, "\"PTH"));
  // zod's hostname: a look-ahead with '$' bounds the whole length.
  const Grammar host = pattern(
      R"(^(?=.{1,253}\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\.?$)");
  EXPECT_TRUE(matches(host, quoted("example.com.")));
  const std::string label(63, 'a');
  const std::string name = label + "." + label + "." + label + "." + std::string(61, 'a');
  EXPECT_TRUE(matches(host, quoted(name)));
  // The look-ahead is taken as a length of 1 to 253: the 254-character form
  // with a final dot is left out (a subset of what the pattern allows).
  EXPECT_FALSE(matches(host, quoted(name + ".")));
  EXPECT_FALSE(prefix_ok(host, "\"" + name + "a"));
  // Pydantic's Decimal as a string: not only signs and dots.
  const Grammar decimal = pattern(R"(^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$)");
  for (const char *ok : {"1", "-0.5", "+.5", "007", "3."})
    EXPECT_TRUE(matches(decimal, quoted(ok))) << ok;
  for (const char *bad : {"", "-", "+.", ".", "1.2.3", "a"})
    EXPECT_FALSE(matches(decimal, quoted(bad))) << bad;
  // An older zod e-mail: no leading dot, no two dots in a row.
  const Grammar email = pattern(
      R"(^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$)");
  EXPECT_TRUE(matches(email, quoted("a.b@c.de")));
  EXPECT_FALSE(matches(email, quoted(".a@c.de")));
  EXPECT_FALSE(matches(email, quoted("a..b@c.de")));
  EXPECT_FALSE(prefix_ok(email, "\"a.."));
  // Mid-pattern, unanchored.
  const Grammar mid = pattern("q(?!u)");
  EXPECT_TRUE(matches(mid, quoted("qatar")));
  EXPECT_TRUE(matches(mid, quoted("quiq")));
  EXPECT_FALSE(matches(mid, quoted("queue")));
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const std::string v = nlohmann::json::parse(random_text(email, seed, 30)).get<std::string>();
    EXPECT_TRUE(v.front() != '.' && v.find("..") == std::string::npos &&
                v.find('@') != std::string::npos)
        << v;
  }
}

TEST(Patterns, WhatStaysRefused) {
  EXPECT_NE(refusal("(?:(?=a)b)*").find("look-ahead inside an unbounded repetition"),
            std::string::npos);
  EXPECT_NE(refusal("(?<=a)b").find("look-behind"), std::string::npos);
  EXPECT_NE(refusal("(?=a)*").find("quantifier after a look-ahead"), std::string::npos);
  EXPECT_NE(refusal("(a)\\1").find("back-references"), std::string::npos);
  EXPECT_NE(refusal("\\bx").find("word boundaries"), std::string::npos);
  EXPECT_NE(refusal("\\p{L}").find("property"), std::string::npos);
  EXPECT_EQ(refusal("(?=\\w)b"), "accepted");
  EXPECT_NE(refusal("(?=a)b").find("matches no string"), std::string::npos); // a is not b
}

TEST(Patterns, CodePointEscapes) {
  const Grammar smile = pattern(R"(^\u{1F600}\uD83D\uDE00$)");
  EXPECT_TRUE(matches(smile, "\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));
  EXPECT_FALSE(matches(smile, "\"\xF0\x9F\x98\x81\xF0\x9F\x98\x80\""));
  const Grammar ctrl = pattern(R"(^a\cJ?b$)"); // \cJ is a newline: never written unescaped
  EXPECT_TRUE(matches(ctrl, quoted("ab")));
}

TEST(Patterns, LengthLimitsBesideAPattern) {
  const Grammar g = pattern("^[a-z]+$", R"(,"minLength":3,"maxLength":5)");
  EXPECT_FALSE(matches(g, quoted("ab")));
  EXPECT_TRUE(matches(g, quoted("abc")));
  EXPECT_TRUE(matches(g, quoted("abcde")));
  EXPECT_FALSE(prefix_ok(g, "\"abcdef"));
  GrammarMatcher m(g);
  EXPECT_EQ(m.min_bytes_to_complete(), 5); // "aaa"
  ASSERT_TRUE(m.advance("\"a"));
  EXPECT_EQ(m.min_bytes_to_complete(), 3); // aa"
  // Characters, not bytes: "é" is one.
  const Grammar any = pattern("^.*$", R"(,"minLength":2,"maxLength":2)");
  EXPECT_TRUE(matches(any, "\"\xC3\xA9\xC3\xA9\""));
  EXPECT_FALSE(matches(any, "\"\xC3\xA9\""));
  // A pattern whose shortest match is longer than maxLength: nothing fits.
  try {
    (void)pattern("^[0-9]{4}$", R"(,"maxLength":3)");
    ADD_FAILURE() << "accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no string of the allowed length"), std::string::npos)
        << e.what();
  }
  // An odd-length-only pattern with an even window: only 3 of 2..4 fits.
  const Grammar odd = pattern("^(?:ab)*a$", R"(,"minLength":2,"maxLength":4)");
  EXPECT_TRUE(matches(odd, quoted("aba")));
  EXPECT_FALSE(matches(odd, quoted("a")));
  EXPECT_FALSE(prefix_ok(odd, "\"abab"));
  GrammarMatcher o(odd);
  EXPECT_EQ(o.min_bytes_to_complete(), 5); // "aba"
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const std::string v = nlohmann::json::parse(random_text(g, seed, 10)).get<std::string>();
    EXPECT_TRUE(v.size() >= 3 && v.size() <= 5 &&
                v.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos)
        << v;
  }
}

} // namespace
} // namespace bonsai

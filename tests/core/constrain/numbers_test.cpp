// Bounded and stepped numbers: the edges of each bound (inclusive and
// exclusive, integer and decimal, negative), multipleOf for integer and
// decimal steps, and random numbers checked with exact integer arithmetic
// written here.
#include <gtest/gtest.h>

#include <string>

#include "grammar_test_support.hpp"

namespace bonsai {
namespace {

using test::matches;
using test::prefix_ok;
using test::random_text;
using test::schema;

// The value of a decimal text times 10^scale, exactly (the text has at
// most `scale` fraction digits besides trailing zeros, else nullopt).
std::optional<long long> scaled(std::string text, int scale) {
  if (text.find('.') != std::string::npos)
    while (text.back() == '0')
      text.pop_back();
  if (text.back() == '.')
    text.pop_back();
  long long v = 0;
  bool negative = false, point = false;
  int frac = 0;
  for (const char c : text) {
    if (c == '-') {
      negative = true;
    } else if (c == '.') {
      point = true;
    } else {
      v = v * 10 + (c - '0');
      frac += point ? 1 : 0;
    }
  }
  if (frac > scale)
    return std::nullopt;
  for (; frac < scale; ++frac)
    v *= 10;
  return negative ? -v : v;
}

TEST(Numbers, IntegerBoundsAtTheEdges) {
  const Grammar g = schema(R"({"type":"integer","minimum":-12,"maximum":305})");
  for (const char *ok : {"-12", "-1", "0", "9", "10", "99", "100", "299", "300", "305"})
    EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char *bad : {"-13", "306", "310", "1000", "-0", "01", "5.0", "1e2", "-100"})
    EXPECT_FALSE(matches(g, bad)) << bad;
  EXPECT_FALSE(prefix_ok(g, "4000")); // no fourth digit
  EXPECT_TRUE(matches(g, "-2"));
  EXPECT_FALSE(prefix_ok(g, "-20"));
  const Grammar ex = schema(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
  EXPECT_FALSE(matches(ex, "0"));
  EXPECT_TRUE(matches(ex, "1"));
  EXPECT_TRUE(matches(ex, "9"));
  EXPECT_FALSE(matches(ex, "10"));
  // Fractional bounds of an integer: 2.5 < x <= 7.9 means 3..7.
  const Grammar frac = schema(R"({"type":"integer","exclusiveMinimum":2.5,"maximum":7.9})");
  EXPECT_FALSE(matches(frac, "2"));
  EXPECT_TRUE(matches(frac, "3"));
  EXPECT_TRUE(matches(frac, "7"));
  EXPECT_FALSE(matches(frac, "8"));
  // zod's z.int(): the safe integers.
  const Grammar safe =
      schema(R"({"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991})");
  EXPECT_TRUE(matches(safe, "9007199254740991"));
  EXPECT_FALSE(matches(safe, "9007199254740992"));
  EXPECT_TRUE(matches(safe, "-9007199254740991"));
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::string t = random_text(g, seed, 6);
    const long long v = std::stoll(t);
    EXPECT_TRUE(v >= -12 && v <= 305) << t;
  }
}

TEST(Numbers, DecimalBoundsAtTheEdges) {
  const Grammar unit = schema(R"({"type":"number","minimum":0,"maximum":1})");
  for (const char *ok : {"0", "1", "0.5", "0.999999999999999", "1.0", "1.000", "0.0001"})
    EXPECT_TRUE(matches(unit, ok)) << ok;
  for (const char *bad : {"-0.1", "1.0001", "2", "1.5", "-1", "1e-3", "0.1e1"})
    EXPECT_FALSE(matches(unit, bad)) << bad;
  const Grammar band =
      schema(R"({"type":"number","exclusiveMinimum":-2.25,"exclusiveMaximum":10.5})");
  for (const char *ok : {"-2.2499", "-2.2", "-2", "0", "10.49999", "10", "10.4"})
    EXPECT_TRUE(matches(band, ok)) << ok;
  for (const char *bad : {"-2.25", "-2.250", "-2.26", "-3", "10.5", "10.50", "10.51", "11"})
    EXPECT_FALSE(matches(band, bad)) << bad;
  const Grammar positive = schema(R"({"type":"number","exclusiveMinimum":0})");
  EXPECT_FALSE(matches(positive, "0"));
  EXPECT_FALSE(matches(positive, "0.000"));
  EXPECT_TRUE(matches(positive, "0.001"));
  EXPECT_FALSE(matches(positive, "-0.5"));
  // 15 significant digits at most: what compares exactly as a double does.
  EXPECT_TRUE(matches(positive, "123456789012345"));
  EXPECT_FALSE(prefix_ok(positive, "1234567890123456"));
  EXPECT_TRUE(matches(positive, "1234567.12345678"));
  EXPECT_FALSE(prefix_ok(positive, "1234567.123456789"));
  // float32's bounds lie beyond every number written: no constraint left.
  const Grammar f32 = schema(
      R"({"type":"number","minimum":-3.4028234663852886e+38,"maximum":3.4028234663852886e+38})");
  EXPECT_TRUE(matches(f32, "-999999999999999"));
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::string t = random_text(band, seed, 12);
    const auto v = scaled(t, 15);
    ASSERT_TRUE(v) << t;
    EXPECT_TRUE(*v > -2'250'000'000'000'000 && *v < 10'500'000'000'000'000) << t;
  }
}

TEST(Numbers, MultiplesOfIntegerAndDecimalSteps) {
  const Grammar five = schema(R"({"type":"integer","multipleOf":5,"minimum":-20,"maximum":20})");
  for (const char *ok : {"-20", "-5", "0", "5", "15", "20"})
    EXPECT_TRUE(matches(five, ok)) << ok;
  for (const char *bad : {"-21", "-3", "1", "12", "25"})
    EXPECT_FALSE(matches(five, bad)) << bad;
  const Grammar half = schema(R"({"type":"number","multipleOf":0.5})");
  for (const char *ok : {"0", "0.5", "1", "1.5", "-2.5", "3.50", "100.0"})
    EXPECT_TRUE(matches(half, ok)) << ok;
  for (const char *bad : {"0.25", "1.2", "0.51", "-0.1"})
    EXPECT_FALSE(matches(half, bad)) << bad;
  const Grammar cents = schema(R"({"type":"number","multipleOf":0.01,"minimum":0})");
  for (const char *ok : {"0", "0.07", "19.99", "1.1", "5.00", "12.340"})
    EXPECT_TRUE(matches(cents, ok)) << ok;
  for (const char *bad : {"0.001", "19.999", "1.005", "-0.01"})
    EXPECT_FALSE(matches(cents, bad)) << bad;
  const Grammar quarter_int = schema(R"({"type":"integer","multipleOf":2.5})");
  EXPECT_TRUE(matches(quarter_int, "5"));
  EXPECT_TRUE(matches(quarter_int, "-10"));
  EXPECT_FALSE(matches(quarter_int, "7")); // 7 / 2.5 = 2.8
  const Grammar mixed = schema(R"({"type":"number","multipleOf":0.25,"maximum":1})");
  EXPECT_TRUE(matches(mixed, "0.75"));
  EXPECT_FALSE(matches(mixed, "1.25"));
  EXPECT_FALSE(matches(mixed, "0.3"));
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::string c = random_text(cents, seed, 10);
    const auto v = scaled(c, 2);
    EXPECT_TRUE(v && *v >= 0) << c;
    const std::string f = random_text(five, seed, 6);
    EXPECT_EQ(std::stoll(f) % 5, 0) << f;
  }
}

TEST(Numbers, ImpossibleOrTooFineIsRefused) {
  auto refusal = [](const std::string &s) -> std::string {
    try {
      (void)Grammar::json_schema(s);
    } catch (const Error &e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(refusal(R"({"type":"integer","minimum":5,"maximum":4})").find("no number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"integer","minimum":1e20})").find("above the largest"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"number","multipleOf":0})").find("above 0"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"number","multipleOf":1.23456789})").find("automaton states"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"number","minimum":"1"})").find("must be a number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"number","exclusiveMinimum":true})").find("draft 4"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"type":"integer","format":"int32"})"), "accepted");
  const Grammar i32 = schema(R"({"type":"number","format":"int32"})");
  EXPECT_TRUE(matches(i32, "2147483647"));
  EXPECT_FALSE(matches(i32, "2147483648"));
  EXPECT_FALSE(matches(i32, "1.5"));
}

} // namespace
} // namespace bonsai

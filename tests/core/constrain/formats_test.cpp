// String formats against hand-picked texts (month lengths, leap years, the
// edges of each field), and random texts of each format checked by
// arithmetic written here, independent of the compiler's patterns.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar_test_support.hpp"

namespace bonsai {
namespace {

using test::matches;
using test::prefix_ok;
using test::random_text;

Grammar format(const std::string &name, const std::string &more = "") {
  return Grammar::json_schema(R"({"type":"string","format":")" + name + "\"" + more + "}");
}

std::string quoted(const std::string &s) {
  return "\"" + s + "\"";
}

bool leap(int y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

// YYYY-MM-DD with a real day of a real month.
bool valid_date(const std::string &s) {
  int y, m, d;
  char tail;
  if (s.size() != 10 || s[4] != '-' || s[7] != '-' ||
      std::sscanf(s.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3)
    return false;
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m >= 1 && m <= 12 && d >= 1 && d <= days[m - 1] + (m == 2 && leap(y) ? 1 : 0);
}

TEST(Formats, DatesKnowMonthLengthsAndLeapYears) {
  const Grammar g = format("date");
  for (const char *ok : {"2024-02-29", "2000-02-29", "1600-02-29", "0000-02-29", "2023-01-31",
                         "2023-04-30", "2023-12-31", "1999-02-28"})
    EXPECT_TRUE(matches(g, quoted(ok))) << ok;
  for (const char *bad :
       {"2023-02-29", "1900-02-29", "2100-02-29", "2023-04-31", "2023-06-31", "2023-13-01",
        "2023-00-10", "2023-01-00", "2023-01-32", "23-01-01", "2023-1-01", "2023-01-01T"})
    EXPECT_FALSE(matches(g, quoted(bad))) << bad;
  EXPECT_FALSE(prefix_ok(g, "\"2023-02-3"));  // no 30th of February
  EXPECT_FALSE(prefix_ok(g, "\"2023-02-29")); // not a leap year: the 9 is refused
  EXPECT_TRUE(prefix_ok(g, "\"2024-02-29"));
  GrammarMatcher m(g);
  EXPECT_EQ(m.min_bytes_to_complete(), 12); // "YYYY-MM-DD"
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::string text = random_text(g, seed, 40);
    const auto v = nlohmann::json::parse(text);
    EXPECT_TRUE(valid_date(v.get<std::string>())) << text;
  }
}

// HH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
bool valid_time(const std::string &s) {
  int h, m, sec;
  if (s.size() < 9 || std::sscanf(s.c_str(), "%2d:%2d:%2d", &h, &m, &sec) != 3 || s[2] != ':' ||
      s[5] != ':')
    return false;
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      ++i;
    if (i == from)
      return false;
  }
  if (h > 23 || m > 59 || sec > 59)
    return false;
  const std::string zone = s.substr(i);
  if (zone == "Z")
    return true;
  int zh, zm;
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':' &&
         std::sscanf(zone.c_str() + 1, "%2d:%2d", &zh, &zm) == 2 && zh <= 23 && zm <= 59;
}

TEST(Formats, TimesAndDateTimesHaveSecondsAndAZone) {
  const Grammar t = format("time");
  for (const char *ok : {"00:00:00Z", "23:59:59Z", "12:30:00.123+05:30", "08:00:00-23:59"})
    EXPECT_TRUE(matches(t, quoted(ok))) << ok;
  for (const char *bad : {"24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00Z", "12:00:00",
                          "12:00:00+24:00", "12:00:00.Z", "12:00:00z"})
    EXPECT_FALSE(matches(t, quoted(bad))) << bad;
  const Grammar dt = format("date-time");
  EXPECT_TRUE(matches(dt, quoted("2024-02-29T23:59:59.5+01:00")));
  EXPECT_FALSE(matches(dt, quoted("2023-02-29T10:00:00Z")));
  EXPECT_FALSE(matches(dt, quoted("2024-02-29 10:00:00Z")));
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::string v = nlohmann::json::parse(random_text(dt, seed, 60)).get<std::string>();
    ASSERT_GE(v.size(), 11u) << v;
    EXPECT_TRUE(valid_date(v.substr(0, 10)) && v[10] == 'T' && valid_time(v.substr(11))) << v;
    const std::string tv = nlohmann::json::parse(random_text(t, seed, 40)).get<std::string>();
    EXPECT_TRUE(valid_time(tv)) << tv;
  }
}

TEST(Formats, Durations) {
  const Grammar g = format("duration");
  for (const char *ok : {"P1D", "P3W", "PT5M", "P1Y2M3DT4H5M6S", "PT0S", "P1MT1S", "P2Y"})
    EXPECT_TRUE(matches(g, quoted(ok))) << ok;
  for (const char *bad : {"P", "PT", "P1DT", "P1W2D", "1D", "P1S", "PT1D", "P1M1Y", "P-1D"})
    EXPECT_FALSE(matches(g, quoted(bad))) << bad;
}

TEST(Formats, EmailUuidUriHostname) {
  const Grammar email = format("email");
  for (const char *ok : {"a@b.co", "first.last+tag@mail.example.org", "x_y@h-1.io"})
    EXPECT_TRUE(matches(email, quoted(ok))) << ok;
  for (const char *bad :
       {"@b.co", "a@", "a@b", "a..b@c.de", ".a@b.co", "a@-b.co", "a@b.1", "a b@c.de"})
    EXPECT_FALSE(matches(email, quoted(bad))) << bad;
  const Grammar uuid = format("uuid");
  EXPECT_TRUE(matches(uuid, quoted("123e4567-e89b-12d3-a456-426614174000")));
  EXPECT_FALSE(matches(uuid, quoted("123e4567-e89b-12d3-a456-42661417400")));
  EXPECT_FALSE(matches(uuid, quoted("123e4567e89b12d3a456426614174000")));
  EXPECT_FALSE(prefix_ok(uuid, "\"123g"));
  const Grammar uri = format("uri");
  for (const char *ok : {"https://example.com", "http://a.b:8080/p/q?x=1&y=%20#top", "ftp://host/"})
    EXPECT_TRUE(matches(uri, quoted(ok))) << ok;
  for (const char *bad : {"example.com", "https://", "https//x.y", "1http://x", "http://a b"})
    EXPECT_FALSE(matches(uri, quoted(bad))) << bad;
  const Grammar host = format("hostname");
  EXPECT_TRUE(matches(host, quoted("a-b.example.com")));
  EXPECT_TRUE(matches(host, quoted(std::string(63, 'a'))));
  EXPECT_FALSE(matches(host, quoted(std::string(64, 'a')))); // a label of at most 63
  EXPECT_FALSE(matches(host, quoted("-a.com")));
  EXPECT_FALSE(matches(host, quoted("a-.com")));
  // 253 characters in all: four labels of 63 are 255.
  const std::string label(63, 'x');
  const std::string long_name = label + "." + label + "." + label + "." + std::string(61, 'x');
  EXPECT_EQ(long_name.size(), 253u);
  EXPECT_TRUE(matches(host, quoted(long_name)));
  EXPECT_FALSE(prefix_ok(host, quoted(long_name + "x").substr(0, 255)));
}

bool valid_ipv4(const std::string &s) {
  int parts = 0;
  size_t i = 0;
  while (i <= s.size()) {
    const size_t dot = std::min(s.find('.', i), s.size());
    const std::string part = s.substr(i, dot - i);
    if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0') ||
        part.find_first_not_of("0123456789") != std::string::npos || std::stoi(part) > 255)
      return false;
    ++parts;
    i = dot + 1;
  }
  return parts == 4;
}

// Groups of 1-4 hex digits, 8 of them, or fewer with one "::".
bool valid_ipv6(const std::string &s) {
  const size_t gap = s.find("::");
  if (gap != std::string::npos && s.find("::", gap + 1) != std::string::npos)
    return false;
  auto groups = [](const std::string &part, int &count) {
    if (part.empty())
      return true;
    size_t i = 0;
    while (true) {
      const size_t colon = std::min(part.find(':', i), part.size());
      const std::string g = part.substr(i, colon - i);
      if (g.empty() || g.size() > 4 || g.find_first_not_of("0123456789abcdef") != std::string::npos)
        return false;
      ++count;
      if (colon == part.size())
        return true;
      i = colon + 1;
    }
  };
  int count = 0;
  if (gap == std::string::npos)
    return groups(s, count) && count == 8;
  return groups(s.substr(0, gap), count) && groups(s.substr(gap + 2), count) && count <= 7;
}

TEST(Formats, IpAddresses) {
  const Grammar v4 = format("ipv4");
  for (const char *ok : {"0.0.0.0", "255.255.255.255", "192.168.1.20"})
    EXPECT_TRUE(matches(v4, quoted(ok))) << ok;
  for (const char *bad : {"256.1.1.1", "1.1.1", "01.1.1.1", "1.1.1.1.1", "1..1.1"})
    EXPECT_FALSE(matches(v4, quoted(bad))) << bad;
  const Grammar v6 = format("ipv6");
  for (const char *ok :
       {"::", "::1", "1::", "fe80::1:2", "2001:db8:0:0:0:0:2:1", "1:2:3:4:5:6:7::"})
    EXPECT_TRUE(matches(v6, quoted(ok))) << ok;
  for (const char *bad : {":::", "1:2:3:4:5:6:7:8:9", "12345::", "1::2::3", "g::1", ":1"})
    EXPECT_FALSE(matches(v6, quoted(bad))) << bad;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::string a = nlohmann::json::parse(random_text(v4, seed, 30)).get<std::string>();
    EXPECT_TRUE(valid_ipv4(a)) << a;
    const std::string b = nlohmann::json::parse(random_text(v6, seed, 50)).get<std::string>();
    EXPECT_TRUE(valid_ipv6(b)) << b;
  }
}

// zod writes a pattern beside the format; both hold. A length limit holds
// with them.
TEST(Formats, TogetherWithPatternsAndLengths) {
  const Grammar zod_uuid = Grammar::json_schema(
      R"({"type":"string","format":"uuid","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$"})");
  EXPECT_TRUE(matches(zod_uuid, quoted("123e4567-e89b-12d3-a456-426614174000")));
  EXPECT_FALSE(matches(zod_uuid, quoted("123e4567-e89b-02d3-a456-426614174000"))); // version 0
  EXPECT_FALSE(matches(zod_uuid, quoted("123E4567-e89b-12d3-a456-426614174000"))); // upper case
  const Grammar short_email = format("email", R"(,"maxLength":6,"minLength":6)");
  EXPECT_TRUE(matches(short_email, quoted("ab@c.d"))); // a one-letter last label is fine
  EXPECT_TRUE(matches(short_email, quoted("a@b.cd")));
  EXPECT_FALSE(matches(short_email, quoted("a@b.cde")));
  EXPECT_FALSE(matches(short_email, quoted("a@b.c")));
  EXPECT_FALSE(prefix_ok(short_email, "\"abcde")); // no room left for "@x.yz"
  GrammarMatcher m(short_email);
  ASSERT_TRUE(m.advance("\"a"));
  EXPECT_EQ(m.min_bytes_to_complete(), 6); // @b.cd"
  // The pattern and the date format together: zod's ISO date.
  const Grammar date = Grammar::json_schema(
      R"({"type":"string","format":"date","minLength":1,"pattern":"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))$"})");
  EXPECT_TRUE(matches(date, quoted("2024-02-29")));
  EXPECT_FALSE(matches(date, quoted("2023-02-29")));
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::string text = random_text(short_email, seed, 20);
    EXPECT_EQ(nlohmann::json::parse(text).get<std::string>().size(), 6u) << text;
  }
}

TEST(Formats, UnknownFormatsAreRefusedUnlessAPatternDecides) {
  try {
    (void)format("jwt");
    ADD_FAILURE() << "accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("the format 'jwt' is not supported"), std::string::npos)
        << e.what();
  }
  const Grammar nanoid = Grammar::json_schema(
      R"({"type":"string","format":"nanoid","pattern":"^[a-zA-Z0-9_-]{21}$"})");
  EXPECT_TRUE(matches(nanoid, quoted("V1StGXR8_Z5jdHi6B-myT")));
  EXPECT_FALSE(matches(nanoid, quoted("short")));
  EXPECT_TRUE(matches(format("password"), quoted("anything at all")));
}

} // namespace
} // namespace bonsai

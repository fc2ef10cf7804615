// llama.cpp's Qwen2 tokenizer vectors (tests/data/tokenizer/upstream-qwen2.*).
//
// Format: cases in .inp are separated by "\n__ggml_vocab_test__\n" and .out
// has one line of space-separated ids per case. Splitting both files the same
// way gives 47 pairs: 46 texts plus the empty text after the final separator,
// which pairs with the empty last line of .out (a second empty-text case; the
// third case is also empty).
//
// None of the texts contains a special token, so parse_special does not
// matter; both settings are checked. llama.cpp's test-tokenizer-0 calls
// common_tokenize(..., add_special = false, parse_special = false).
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

std::vector<std::string> split(const std::string &text, const std::string &separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(separator, start)) != std::string::npos;) {
    parts.push_back(text.substr(start, at - start));
    start = at + separator.size();
  }
  parts.push_back(text.substr(start));
  return parts;
}

struct UpstreamCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<UpstreamCase> load_cases() {
  const auto texts =
      split(read_file(data_path("tokenizer/upstream-qwen2.inp")), "\n__ggml_vocab_test__\n");
  const auto lines = split(read_file(data_path("tokenizer/upstream-qwen2.out")), "\n");
  if (texts.size() != lines.size())
    throw std::runtime_error("upstream-qwen2: .inp has " + std::to_string(texts.size()) +
                             " cases but .out has " + std::to_string(lines.size()) + " lines");
  std::vector<UpstreamCase> cases;
  for (size_t i = 0; i < texts.size(); ++i) {
    UpstreamCase c{texts[i], {}};
    std::istringstream in(lines[i]);
    for (int32_t id; in >> id;)
      c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

size_t count_matches(bool parse_special) {
  size_t passed = 0;
  const auto cases = load_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = qwen3_tokenizer().encode(cases[i].text, parse_special);
    EXPECT_EQ(ids, cases[i].ids) << "case " << i << ": '" << cases[i].text << "'";
    passed += ids == cases[i].ids;
  }
  return passed;
}

TEST(UpstreamQwen2Vectors, FilesPairUpInto47Cases) {
  const auto cases = load_cases();
  ASSERT_EQ(cases.size(), 47u);
  EXPECT_EQ(cases[0].text, "ied 4 \xC2\xBD months");
  EXPECT_EQ(cases[0].ids, (std::vector<int32_t>{1122, 220, 19, 220, 26062, 3951}));
  EXPECT_TRUE(cases.back().text.empty());
  EXPECT_TRUE(cases.back().ids.empty());
}

TEST(UpstreamQwen2Vectors, AllCasesMatchWithSpecialParsing) {
  EXPECT_EQ(count_matches(true), 47u);
}

TEST(UpstreamQwen2Vectors, AllCasesMatchWithoutSpecialParsing) {
  EXPECT_EQ(count_matches(false), 47u);
}

TEST(UpstreamQwen2Vectors, DecodeRoundTripsEveryCase) {
  // The texts are already NFC, so decode(encode(s)) must give s back exactly.
  for (const auto &c : load_cases()) {
    EXPECT_EQ(nfc(c.text), c.text);
    EXPECT_EQ(qwen3_tokenizer().decode(qwen3_tokenizer().encode(c.text)), c.text);
  }
}

} // namespace
} // namespace bonsai::test

// Hugging Face reference ids (tests/data/tokenizer/hf-cases.json): special
// tokens in the text are matched as special, NFC is applied first.
#include <algorithm>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "mini_json.hpp"
#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

struct HfCase {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> llama_cpp_ids;
};

std::vector<HfCase> load_hf_cases() {
  const auto doc = mini_json::parse_file(data_path("tokenizer/hf-cases.json"));
  std::vector<HfCase> cases;
  for (const auto &c : doc.as_array())
    cases.push_back({c["text"].as_string(), c["ids"].as_int_vector<int32_t>(),
                     c["llama_cpp_ids"].as_int_vector<int32_t>()});
  return cases;
}

TEST(HfCases, All22CasesMatchHuggingFace) {
  const auto cases = load_hf_cases();
  ASSERT_EQ(cases.size(), 22u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = qwen3_tokenizer().encode(cases[i].text, true);
    EXPECT_EQ(ids, cases[i].ids) << "case " << i << ": '" << cases[i].text << "'";
    passed += ids == cases[i].ids;
  }
  EXPECT_EQ(passed, 22u);
}

TEST(HfCases, DecomposedAccentIsComposedBeforeBpe) {
  // "e" + U+0301: llama.cpp (no NFC) gives 68 53839 ..., Hugging Face gives
  // the id of the precomposed "é" (963) first.
  const auto cases = load_hf_cases();
  const auto it = std::find_if(cases.begin(), cases.end(),
                               [](const HfCase &c) { return c.ids != c.llama_cpp_ids; });
  ASSERT_NE(it, cases.end());
  EXPECT_EQ(it->text.substr(0, 3), "e\xCC\x81");
  const auto ids = qwen3_tokenizer().encode(it->text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 963);
  EXPECT_EQ(qwen3_tokenizer().decode(std::vector<int32_t>{963}), "\xC3\xA9");
}

TEST(HfCases, DecodeOfEncodeIsTheNfcText) {
  for (const auto &c : load_hf_cases()) {
    EXPECT_EQ(qwen3_tokenizer().decode(qwen3_tokenizer().encode(c.text)), nfc(c.text))
        << "'" << c.text << "'";
    EXPECT_EQ(qwen3_tokenizer().decode(c.ids), nfc(c.text)) << "'" << c.text << "'";
  }
}

} // namespace
} // namespace bonsai::test

// TokenConstraint on the real Qwen3 vocabulary: the fast mask (sorted walk,
// plain-string shortcut) against a token-by-token check, and replies drawn
// from random logits that must always come out as valid, complete JSON.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "../tokenizer/tokenizer_fixture.hpp"
#include "bonsai/core/token_constraint.hpp"

namespace bonsai {
namespace {

using test::qwen3_tokenizer;

std::shared_ptr<const TokenIndex> qwen3_index() {
  static const auto index = std::make_shared<const TokenIndex>(qwen3_tokenizer());
  return index;
}

const char *kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer"},
    "mood": {"enum": ["happy", "sad"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    "code": {"type": "string", "pattern": "^[a-f]{2,4}$"}
  },
  "required": ["name", "mood"],
  "additionalProperties": false
})";

// Every id, one by one, through allows().
std::vector<uint8_t> slow_mask(const TokenConstraint &c, int32_t budget) {
  std::vector<uint8_t> mask(static_cast<size_t>(qwen3_tokenizer().n_vocab()), 0);
  for (int32_t id = 0; id < qwen3_tokenizer().n_vocab(); ++id)
    mask[static_cast<size_t>(id)] = c.allows(id, budget) ? 1 : 0;
  return mask;
}

void advance_text(TokenConstraint &c, const std::string &text) {
  for (const int32_t id : qwen3_tokenizer().encode(text, false))
    c.accept(id);
}

TEST(TokenConstraint, FastMaskEqualsTokenByTokenCheck) {
  const std::vector<int32_t> ends = qwen3_tokenizer().stop_ids();
  const char *prefixes[] = {"",
                            R"({"name": ")",
                            R"({"name": "Ada", "mood")",
                            R"({"name": "Ada", "age": 4)",
                            R"({"name": "Ada", "mood": "sad", "code": "ab)",
                            R"({"name": "Ada", "mood": "sad", "tags": ["x)",
                            R"({"name": "Ada", "mood": "sad"})"};
  for (const char *prefix : prefixes) {
    // 5 leaves room for "]} and the end token only: inside the tag, plain
    // tokens no longer fit but a closing quote does.
    for (const int32_t budget : {-1, 100, 5, 3}) {
      TokenConstraint c(Grammar::json_schema(kPerson), qwen3_index(), ends);
      advance_text(c, prefix);
      const std::vector<uint8_t> fast = c.mask(budget);
      const std::vector<uint8_t> slow = slow_mask(c, budget);
      size_t allowed = 0, differ = 0;
      for (size_t i = 0; i < fast.size(); ++i) {
        allowed += fast[i];
        differ += fast[i] != slow[i];
      }
      EXPECT_EQ(differ, 0u) << "prefix " << prefix << " budget " << budget;
      if (budget > 5) {
        EXPECT_GT(allowed, 0u) << "prefix " << prefix << " budget " << budget;
      }
    }
  }
}

// Strings read by automata (formats, patterns with lengths) and bounded
// numbers: the cached per-state token lists give the same mask.
TEST(TokenConstraint, FastMaskEqualsTokenByTokenCheckInFormats) {
  const char *schema = R"({"type":"object","properties":{
    "email":{"type":"string","format":"email","maxLength":20},
    "site":{"type":"string","format":"uri"},
    "code":{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":6},
    "n":{"type":"integer","minimum":-5,"maximum":250}},
    "required":["email","site","code","n"],"additionalProperties":false})";
  const std::vector<int32_t> ends = qwen3_tokenizer().stop_ids();
  const char *prefixes[] = {R"({"email": "ada)", R"({"email": "ada.b@ex)",
                            R"({"email": "a@b.co", "site": "https://x.io/p)",
                            R"({"email": "a@b.co", "site": "http://a.b", "code": "x)",
                            R"({"email": "a@b.co", "site": "http://a.b", "code": "xyz", "n": 2)"};
  for (const char *prefix : prefixes) {
    for (const int32_t budget : {-1, 100, 30, 12}) {
      TokenConstraint c(Grammar::json_schema(schema), qwen3_index(), ends);
      advance_text(c, prefix);
      // Twice: the second mask comes from the cache.
      for (int round = 0; round < 2; ++round) {
        const std::vector<uint8_t> fast = c.mask(budget);
        const std::vector<uint8_t> slow = slow_mask(c, budget);
        size_t differ = 0;
        for (size_t i = 0; i < fast.size(); ++i)
          differ += fast[i] != slow[i];
        EXPECT_EQ(differ, 0u) << "prefix " << prefix << " budget " << budget;
      }
    }
  }
}

TEST(TokenConstraint, ControlTokensOnlyEndACompleteReply) {
  const Tokenizer &t = qwen3_tokenizer();
  TokenConstraint c(Grammar::json_schema(R"({"type":"string"})"), qwen3_index(), t.stop_ids());
  advance_text(c, "\"abc");
  EXPECT_FALSE(c.allows(t.im_end_id(), -1));
  EXPECT_FALSE(c.allows(t.im_start_id(), -1));      // "<|im_start|>" is not string text
  EXPECT_TRUE(c.allows(t.token_id("<think>"), -1)); // user-defined: plain text here
  advance_text(c, "\"");
  EXPECT_TRUE(c.allows(t.im_end_id(), -1));
  EXPECT_FALSE(c.allows(t.encode("x", false)[0], -1));
  EXPECT_THROW(c.accept(t.encode("x", false)[0]), Error);
}

// Draws replies the way a random-weight model would: random logits, the
// lazy check, the mask when the draw is refused. The reply must end with an
// end token within max_tokens.
std::string random_reply(const Grammar &g, uint32_t seed, int32_t max_tokens) {
  const Tokenizer &t = qwen3_tokenizer();
  TokenConstraint c(g, qwen3_index(), t.stop_ids());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> any(0, t.n_vocab() - 1);
  std::string text;
  for (int32_t used = 0; used < max_tokens; ++used) {
    const int32_t budget = max_tokens - used;
    int32_t token = any(rng);
    if (!c.allows(token, budget)) {
      const std::vector<uint8_t> &mask = c.mask(budget);
      std::vector<int32_t> allowed;
      for (size_t i = 0; i < mask.size(); ++i)
        if (mask[i])
          allowed.push_back(static_cast<int32_t>(i));
      if (allowed.empty())
        ADD_FAILURE() << "no token allowed with " << budget << " tokens left, "
                      << c.matcher().min_bytes_to_complete() << " bytes needed, after " << text;
      if (allowed.empty())
        break;
      token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    }
    if (c.is_end_token(token))
      return text;
    c.accept(token);
    text += t.token_bytes(token);
  }
  ADD_FAILURE() << "no end token within " << max_tokens << " tokens: " << text;
  return text;
}

TEST(TokenConstraint, RandomRepliesAreValidUnderTheSchema) {
  const Grammar g = Grammar::json_schema(kPerson);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::string reply = random_reply(g, seed, 24 + static_cast<int32_t>(seed % 5) * 10);
    SCOPED_TRACE(reply);
    const nlohmann::json v = nlohmann::json::parse(reply); // throws when not JSON
    ASSERT_TRUE(v.is_object());
    ASSERT_TRUE(v.contains("name") && v["name"].is_string());
    EXPECT_LE(v["name"].get<std::string>().size(), 48u);
    ASSERT_TRUE(v.contains("mood"));
    EXPECT_TRUE(v["mood"] == "happy" || v["mood"] == "sad");
    for (const auto &[key, value] : v.items()) {
      EXPECT_TRUE(key == "name" || key == "mood" || key == "age" || key == "tags" || key == "code");
      if (key == "age") {
        EXPECT_TRUE(value.is_number_integer());
      }
      if (key == "tags") {
        ASSERT_TRUE(value.is_array());
        EXPECT_LE(value.size(), 2u);
      }
      if (key == "code") {
        const std::string code = value.get<std::string>();
        EXPECT_TRUE(code.size() >= 2 && code.size() <= 4 &&
                    code.find_first_not_of("abcdef") == std::string::npos);
      }
    }
  }
}

TEST(TokenConstraint, RandomToolCallsParse) {
  const ToolSchema tools[] = {
      {"add", R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},)"
              R"("required":["a","b"],"additionalProperties":false})"}};
  const Grammar g = Grammar::tool_calls(tools, true);
  for (uint32_t seed = 1; seed <= 15; ++seed) {
    const std::string reply = random_reply(g, seed, 60);
    SCOPED_TRACE(reply);
    const std::string open = "<tool_call>\n", close = "\n</tool_call>";
    ASSERT_EQ(reply.rfind(open, 0), 0u);
    const size_t end = reply.find(close);
    ASSERT_NE(end, std::string::npos);
    const auto call = nlohmann::json::parse(reply.substr(open.size(), end - open.size()));
    EXPECT_EQ(call["name"], "add");
    EXPECT_TRUE(call["arguments"]["a"].is_number());
    EXPECT_TRUE(call["arguments"]["b"].is_number());
  }
}

} // namespace
} // namespace bonsai

// BPE rules and error handling on hand-made vocabularies, where every expected
// id follows from the merge list by hand.
#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/tokenizer.hpp"

namespace bonsai::test {
namespace {

// GPT-2's byte spelling, written out from its definition: printable Latin-1
// bytes stand for themselves, the other 68 take U+0100, U+0101, ... in order.
std::string spell_byte(int byte) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int moved = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int cp = printable ? b : 0x100 + moved++;
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      t[b] = s;
    }
    return t;
  }();
  return table[static_cast<size_t>(byte)];
}

// Ids 0..255 are the bytes; extra tokens follow from id 256.
TokenizerData byte_vocab(const std::vector<std::string> &extra_tokens,
                         const std::vector<std::string> &merges) {
  TokenizerData d;
  d.source = "test-vocab";
  for (int b = 0; b < 256; ++b)
    d.tokens.push_back(spell_byte(b));
  for (const auto &t : extra_tokens)
    d.tokens.push_back(t);
  d.token_types.assign(d.tokens.size(), TokenType::Normal);
  d.merges = merges;
  return d;
}

std::vector<int32_t> ids(std::initializer_list<int32_t> list) {
  return list;
}

TEST(SmallVocab, ByteSpellingMatchesKnownExamples) {
  EXPECT_EQ(spell_byte(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(spell_byte('\n'), "\xC4\x8A"); // Ċ
  EXPECT_EQ(spell_byte(0xAD), "\xC5\x83"); // soft hyphen is the last moved byte: Ń
}

TEST(SmallVocab, WithoutMergesEveryByteIsAToken) {
  const Tokenizer t(byte_vocab({}, {}));
  EXPECT_EQ(t.encode("ab"), ids({'a', 'b'}));
  EXPECT_EQ(t.encode("\xC3\xA9"), ids({0xC3, 0xA9})); // é is two bytes
  EXPECT_EQ(t.encode(std::string("a\0b", 3)), ids({'a', 0, 'b'}));
  EXPECT_EQ(t.encode(""), ids({}));
}

TEST(SmallVocab, LowerRankMergesFirst) {
  // "abc": with "b c" ranked first, "a b" never gets a chance.
  const Tokenizer bc_first(byte_vocab({"bc", "ab", "abc"}, {"b c", "a b", "ab c"}));
  EXPECT_EQ(bc_first.encode("abc"), ids({'a', 256}));
  const Tokenizer ab_first(byte_vocab({"ab", "bc", "abc"}, {"a b", "b c", "ab c"}));
  EXPECT_EQ(ab_first.encode("abc"), ids({258}));
}

TEST(SmallVocab, EqualPairsMergeLeftmostFirst) {
  const Tokenizer t(byte_vocab({"aa", "aaaa"}, {"a a", "aa aa"}));
  EXPECT_EQ(t.encode("aaa"), ids({256, 'a'}));
  EXPECT_EQ(t.encode("aaaa"), ids({257}));
  EXPECT_EQ(t.encode("aaaaa"), ids({257, 'a'}));
}

TEST(SmallVocab, MergesUseTheByteSpellingOfSpace) {
  const std::string g = spell_byte(' ');
  const Tokenizer t(byte_vocab({g + "a"}, {g + " a"}));
  EXPECT_EQ(t.encode(" a a"), ids({256, 256}));
  EXPECT_EQ(t.decode(ids({256, 256})), " a a");
}

TEST(SmallVocab, BpeNeverCrossesPreTokenBoundaries) {
  // "a1" would merge, but the pre-tokenizer splits letters from digits.
  const Tokenizer t(byte_vocab({"a1"}, {"a 1"}));
  EXPECT_EQ(t.encode("a1"), ids({'a', '1'}));
}

TEST(SmallVocab, AddedTokensMatchLongestFirst) {
  TokenizerData d = byte_vocab({"<a>", "<a>b", "<c>"}, {});
  d.token_types[256] = TokenType::UserDefined;
  d.token_types[257] = TokenType::UserDefined;
  d.token_types[258] = TokenType::Control;
  const Tokenizer t(std::move(d));
  EXPECT_EQ(t.encode("x<a>bc"), ids({'x', 257, 'c'}));
  EXPECT_EQ(t.encode("<a><c>"), ids({256, 258}));
  // Without special parsing CONTROL tokens are plain text, USER_DEFINED are not.
  EXPECT_EQ(t.encode("<a><c>", false), ids({256, '<', 'c', '>'}));
  EXPECT_TRUE(t.is_special(258));
  EXPECT_FALSE(t.is_special('a'));
}

TEST(SmallVocab, UnusedTokensDecodeToNothingAndAreNeverMatched) {
  TokenizerData d = byte_vocab({"[PAD256]"}, {});
  d.token_types[256] = TokenType::Unused;
  const Tokenizer t(std::move(d));
  EXPECT_EQ(t.decode(ids({'x', 256, 'y'})), "xy");
  EXPECT_EQ(t.encode("[PAD256]").size(), 8u);
}

TEST(SmallVocab, SpecialIdsAndLookups) {
  TokenizerData d = byte_vocab({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, {});
  for (size_t i = 256; i < d.tokens.size(); ++i)
    d.token_types[i] = TokenType::Control;
  d.eos_id = 258;
  d.bos_id = 256;
  const Tokenizer t(std::move(d));
  EXPECT_EQ(t.n_vocab(), 259);
  EXPECT_EQ(t.im_start_id(), 257);
  EXPECT_EQ(t.im_end_id(), 258);
  EXPECT_EQ(t.endoftext_id(), 256);
  EXPECT_EQ(t.stop_ids(), ids({256, 258}));
  EXPECT_EQ(t.token_id("<|im_end|>"), 258);
  EXPECT_EQ(t.token_id("nope"), -1);
  EXPECT_EQ(t.token_text(' '), spell_byte(' '));
  EXPECT_EQ(t.token_bytes(' '), " ");
  EXPECT_EQ(t.pad_id(), -1);
}

TEST(SmallVocab, CopiesShareTheVocabulary) {
  const Tokenizer t(byte_vocab({"ab"}, {"a b"}));
  const Tokenizer copy = t;
  EXPECT_EQ(copy.encode("ab"), ids({256}));
}

TEST(SmallVocab, LongWordsFollowTheSameRules) {
  // 40 letters: past the short-piece path, through the heap-based one.
  const Tokenizer t(byte_vocab({"aa", "aaaa", "ab", "abab"}, {"a a", "aa aa", "a b", "ab ab"}));
  EXPECT_EQ(t.encode(std::string(40, 'a')), std::vector<int32_t>(10, 257));
  EXPECT_EQ(t.encode(std::string(41, 'a')).back(), 'a');
  std::string abab;
  for (int i = 0; i < 20; ++i)
    abab += "ab";
  EXPECT_EQ(t.encode(abab), std::vector<int32_t>(10, 259));
}

// Textbook BPE on strings: merge the adjacent pair with the lowest rank, the
// leftmost one on ties, until no pair has a rank.
std::vector<std::string>
reference_bpe(const std::string &word,
              const std::map<std::pair<std::string, std::string>, size_t> &rank) {
  std::vector<std::string> symbols;
  for (char c : word)
    symbols.emplace_back(1, c);
  for (;;) {
    size_t best = symbols.size();
    size_t best_rank = SIZE_MAX;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = rank.find({symbols[i], symbols[i + 1]});
      if (it != rank.end() && it->second < best_rank) {
        best_rank = it->second;
        best = i;
      }
    }
    if (best == symbols.size())
      return symbols;
    symbols[best] += symbols[best + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

TEST(SmallVocab, RandomMergeListsAgreeWithTextbookBpe) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    // Grow a vocabulary over {a, b, c} the way BPE training does; a token may
    // be reachable by more than one merge, as in real vocabularies.
    std::vector<std::string> pool = {"a", "b", "c"};
    std::vector<std::string> extra;
    std::vector<std::string> merges;
    std::map<std::pair<std::string, std::string>, size_t> rank;
    for (int k = 0; k < 60; ++k) {
      const std::string l = pool[rng() % pool.size()];
      const std::string r = pool[rng() % pool.size()];
      if (l.size() + r.size() > 12 || rank.count({l, r}))
        continue;
      rank[{l, r}] = merges.size();
      merges.push_back(l + " " + r);
      if (std::find(pool.begin(), pool.end(), l + r) == pool.end()) {
        pool.push_back(l + r);
        extra.push_back(l + r);
      }
    }
    const Tokenizer t(byte_vocab(extra, merges));
    for (int w = 0; w < 50; ++w) {
      std::string word(1 + rng() % 60, 'a');
      for (char &ch : word)
        ch = static_cast<char>('a' + rng() % 3);
      std::vector<int32_t> expected;
      for (const auto &piece : reference_bpe(word, rank))
        expected.push_back(t.token_id(piece));
      ASSERT_EQ(t.encode(word), expected) << "round " << round << " word " << word;
    }
  }
}

// Errors -------------------------------------------------------------------

template <typename F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SmallVocabErrors, UnsupportedModelOrPreTokenizer) {
  TokenizerData d = byte_vocab({}, {});
  d.model = "llama";
  EXPECT_NE(error_of([&] { Tokenizer{d}; }).find("unsupported tokenizer.ggml.model 'llama'"),
            std::string::npos);
  d.model = "gpt2";
  d.pre = "llama-bpe";
  const std::string message = error_of([&] { Tokenizer{d}; });
  EXPECT_NE(message.find("test-vocab"), std::string::npos) << message;
  EXPECT_NE(message.find("unsupported tokenizer.ggml.pre 'llama-bpe'"), std::string::npos);
}

TEST(SmallVocabErrors, MergesMustResolveToTokens) {
  EXPECT_NE(error_of([] { Tokenizer{byte_vocab({}, {"a b"})}; }).find("needs 'ab'"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer{byte_vocab({"ab"}, {"ab"})}; }).find("'left right'"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer{byte_vocab({"ab"}, {"a  b"})}; }).find("'left right'"),
            std::string::npos);
}

TEST(SmallVocabErrors, EveryByteNeedsAToken) {
  TokenizerData d = byte_vocab({}, {});
  d.tokens[0x41] = "not-A";
  EXPECT_NE(error_of([&] { Tokenizer{d}; }).find("no token for byte 0x41"), std::string::npos);
}

TEST(SmallVocabErrors, TokenTypesMustMatchAndBeKnown) {
  TokenizerData d = byte_vocab({}, {});
  d.token_types.pop_back();
  EXPECT_NE(error_of([&] { Tokenizer{d}; }).find("token_type has 255 entries"), std::string::npos);
  d = byte_vocab({}, {});
  d.token_types[3] = static_cast<TokenType>(9);
  EXPECT_NE(error_of([&] { Tokenizer{d}; }).find("unknown token type 9"), std::string::npos);
}

TEST(SmallVocabErrors, SpecialIdsMustBeInRange) {
  TokenizerData d = byte_vocab({}, {});
  d.eos_id = 256;
  EXPECT_NE(error_of([&] { Tokenizer{d}; }).find("eos_token_id = 256"), std::string::npos);
}

TEST(SmallVocabErrors, EmptyVocabulary) {
  TokenizerData d;
  EXPECT_NE(error_of([&] { Tokenizer{d}; }).find("empty"), std::string::npos);
}

TEST(SmallVocabErrors, InvalidUtf8InputIsRejected) {
  const Tokenizer t(byte_vocab({}, {}));
  const std::vector<std::string> bad = {
      "\xFF",             // never valid
      "a\xC3",            // truncated
      "\xC0\xAF",         // overlong '/'
      "\xED\xA0\x80",     // surrogate U+D800
      "\xF4\x90\x80\x80", // past U+10FFFF
      "\x80",             // lone continuation
  };
  for (const auto &s : bad)
    EXPECT_THROW(t.encode(s), Error) << testing::PrintToString(s);
  const std::string message = error_of([&] { t.encode("ok\xFF"); });
  EXPECT_NE(message.find("not valid UTF-8"), std::string::npos) << message;
  EXPECT_NE(message.find("offset 2"), std::string::npos) << message;
}

TEST(SmallVocabErrors, OutOfRangeIdsAreRejected) {
  const Tokenizer t(byte_vocab({}, {}));
  EXPECT_THROW(t.decode(ids({'a', 256})), Error);
  EXPECT_THROW(t.decode(ids({-1})), Error);
  EXPECT_THROW(t.token_text(1000), Error);
  EXPECT_THROW(t.token_bytes(-5), Error);
  EXPECT_THROW(t.is_special(256), Error);
  EXPECT_NE(error_of([&] { t.decode(ids({300})); }).find("token id 300 is out of range"),
            std::string::npos);
}

} // namespace
} // namespace bonsai::test

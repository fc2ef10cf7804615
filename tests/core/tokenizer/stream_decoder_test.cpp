// StreamDecoder: chunks are always valid UTF-8 and add up to the full decode.
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

// Independent check through utf8proc (the decoder uses its own scanner).
bool is_valid_utf8(const std::string &s) {
  const auto *p = reinterpret_cast<const utf8proc_uint8_t *>(s.data());
  utf8proc_ssize_t i = 0;
  const auto n = static_cast<utf8proc_ssize_t>(s.size());
  while (i < n) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(p + i, n - i, &cp);
    if (len <= 0 || cp < 0)
      return false;
    i += len;
  }
  return true;
}

std::vector<std::string> stream(const std::vector<int32_t> &ids) {
  StreamDecoder decoder(qwen3_tokenizer());
  std::vector<std::string> chunks;
  for (int32_t id : ids)
    chunks.push_back(decoder.push(id));
  chunks.push_back(decoder.flush());
  return chunks;
}

TEST(StreamDecoder, HoldsBackAnEmojiSplitAcrossThreeTokens) {
  // Hugging Face ids of "Emoji: 🌱": "Emoji" ":" " \xF0\x9F" "\x8C" "\xB1".
  const std::vector<std::string> chunks = stream({92731, 25, 11162, 234, 109});
  const std::vector<std::string> expected = {"Emoji", ":", " ", "", "\xF0\x9F\x8C\xB1", ""};
  EXPECT_EQ(chunks, expected);
}

TEST(StreamDecoder, HoldsBackATwoByteLetterSplitAcrossTokens) {
  // " \xC3" then "\x9F": " ß" from the Hugging Face ids of "Ünïcödé ÄÖÜ ß ẞ".
  const std::vector<std::string> expected = {" ", "\xC3\x9F", ""};
  EXPECT_EQ(stream({1683, 253}), expected);
}

TEST(StreamDecoder, EveryChunkIsValidAndTheyConcatenateToTheDecode) {
  const std::vector<std::string> texts = {
      "Emoji: \xF0\x9F\x8C\xB1\xF0\x9F\x8C\xB3\xF0\x9F\x8E\x8D and ZWJ "
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D"
      "\xF0\x9F\x91\xA6 family",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9"
      "\xE3\x83\x88\xE3\x81\xA8\xE4\xB8\xAD\xE6\x96\x87\xE6\x96\x87\xE6\x9C\xAC"
      "\xEF\xBC\x8C\xE8\xBF\x98\xE6\x9C\x89\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 "
      "\xED\x85\x8D\xEC\x8A\xA4\xED\x8A\xB8.",
      "\xE1\x9E\x80\xE1\x9E\xB6\xE1\x9E\x93\xE1\x9F\x8B\xE1\x9E\x8F\xE1\x9F\x82 ok",
      "<think> \xF0\x9F\xA6\x99</think>\xE2\x9C\x85"};
  for (const std::string &text : texts) {
    const auto ids = qwen3_tokenizer().encode(text);
    const auto chunks = stream(ids);
    std::string joined;
    size_t held_back = 0; // chunks that differ from their token's own bytes
    for (size_t i = 0; i < chunks.size(); ++i) {
      EXPECT_TRUE(is_valid_utf8(chunks[i])) << "chunk of '" << text << "'";
      held_back += i < ids.size() && chunks[i] != qwen3_tokenizer().token_bytes(ids[i]);
      joined += chunks[i];
    }
    EXPECT_EQ(joined, qwen3_tokenizer().decode(ids));
    EXPECT_EQ(joined, text);
    EXPECT_GT(held_back, 0u) << "no character of '" << text << "' was split across tokens";
  }
}

TEST(StreamDecoder, FlushReplacesAnIncompleteTail) {
  const int32_t f0 = qwen3_tokenizer().token_id("\xC3\xB0"); // "ð" spells byte 0xF0
  ASSERT_GE(f0, 0);
  ASSERT_EQ(qwen3_tokenizer().token_bytes(f0), "\xF0");
  StreamDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(qwen3_tokenizer().token_id("a")), "a");
  EXPECT_EQ(decoder.push(f0), "");
  EXPECT_EQ(decoder.flush(), kReplacement);
  EXPECT_EQ(decoder.flush(), ""); // nothing left
}

TEST(StreamDecoder, ABrokenSequenceBecomesOneReplacementAndTheRestSurvives) {
  const int32_t f0 = qwen3_tokenizer().token_id("\xC3\xB0");
  StreamDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(f0), "");
  EXPECT_EQ(decoder.push(qwen3_tokenizer().token_id("a")), kReplacement + "a");
}

TEST(StreamDecoder, AByteThatNeverStartsACharacterIsReplacedAtOnce) {
  const int32_t ff = qwen3_tokenizer().token_id("\xC3\xBF"); // "ÿ" spells byte 0xFF
  ASSERT_EQ(qwen3_tokenizer().token_bytes(ff), "\xFF");
  StreamDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(ff), kReplacement);
  EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamDecoder, SpecialTokensComeOutAsText) {
  StreamDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(151667), "<think>");
  EXPECT_EQ(decoder.push(151645), "<|im_end|>");
}

TEST(StreamDecoder, ResetDropsHeldBackBytes) {
  StreamDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(11162), " ");
  decoder.reset();
  EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamDecoder, InvalidIdThrows) {
  StreamDecoder decoder(qwen3_tokenizer());
  EXPECT_THROW(decoder.push(-1), Error);
  EXPECT_THROW(decoder.push(qwen3_tokenizer().n_vocab()), Error);
}

} // namespace
} // namespace bonsai::test

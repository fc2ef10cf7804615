// The real Qwen3 vocabulary through the GGUF reader: metadata, special tokens,
// robustness on large inputs, and from_gguf errors on crafted files.
#include <algorithm>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bonsai/core/chat_template.hpp"
#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

using Ids = std::vector<int32_t>;

TEST(Qwen3Vocab, MetadataAndSpecialIds) {
  const Tokenizer &t = qwen3_tokenizer();
  EXPECT_EQ(t.n_vocab(), 151669);
  EXPECT_EQ(t.bos_id(), 151643);
  EXPECT_EQ(t.eos_id(), 151645);
  EXPECT_EQ(t.pad_id(), 151643);
  EXPECT_EQ(t.endoftext_id(), 151643);
  EXPECT_EQ(t.im_start_id(), 151644);
  EXPECT_EQ(t.im_end_id(), 151645);
  EXPECT_EQ(t.stop_ids(), (Ids{151643, 151645}));
  EXPECT_EQ(t.token_id("<think>"), 151667);
  EXPECT_EQ(t.token_text(1879), "\xC4\xA0world"); // "Ġworld"
  EXPECT_EQ(t.token_bytes(1879), " world");
  EXPECT_EQ(t.token_type(151644), TokenType::Control);
  EXPECT_EQ(t.token_type(151667), TokenType::UserDefined);
  EXPECT_TRUE(t.is_special(151644));
  EXPECT_FALSE(t.is_special(1879));
  EXPECT_EQ(detect_chat_template(t.chat_template()), ChatTemplateKind::Qwen3ChatML);
}

TEST(Qwen3Vocab, ControlTokensNeedSpecialParsing) {
  const Tokenizer &t = qwen3_tokenizer();
  // "user" is 872 and "\n" 198 (hf-cases.json chat case).
  EXPECT_EQ(t.encode("<|im_start|>user\n", true), (Ids{151644, 872, 198}));
  const Ids plain = t.encode("<|im_start|>user\n", false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151644), 0);
  EXPECT_GT(plain.size(), 3u);
  EXPECT_EQ(t.decode(plain), "<|im_start|>user\n");
}

TEST(Qwen3Vocab, UserDefinedTokensAreAlwaysMatched) {
  // Like Hugging Face (non-special added tokens) and llama.cpp.
  const Ids expected = {151667, 19895, 287, 151668, 9217}; // hf-cases.json
  EXPECT_EQ(qwen3_tokenizer().encode("<think>reasoning</think>answer", false), expected);
}

TEST(Qwen3Vocab, AddedTokensAreCutOutBeforeNormalization) {
  // NFC would turn ">" + U+0338 into U+226F; the token must still be found.
  const Tokenizer &t = qwen3_tokenizer();
  const Ids ids = t.encode("<think>\xCC\xB8");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 151667);
  EXPECT_EQ(t.decode(ids), "<think>\xCC\xB8");
}

TEST(Qwen3Vocab, LongRunsDoNotBreakTheRegexOrBpe) {
  const Tokenizer &t = qwen3_tokenizer();
  const std::vector<std::string> inputs = {std::string(200000, ' '),
                                           std::string(200000, 'a'),
                                           std::string(100000, '7'),
                                           std::string(100000, '\n'),
                                           std::string(50000, '!') + "x",
                                           [] {
                                             std::string s;
                                             for (int i = 0; i < 20000; ++i)
                                               s += "\xE4\xB8\xAD"; // 中
                                             return s;
                                           }()};
  for (const auto &s : inputs) {
    const Ids ids = t.encode(s);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(t.decode(ids), s);
  }
  // Digits are never merged: one token per digit.
  EXPECT_EQ(t.encode(std::string(100000, '7')).size(), 100000u);
}

TEST(Qwen3Vocab, ConcurrentEncodesAgree) {
  const Tokenizer &t = qwen3_tokenizer();
  const std::string text =
      "Concurrency \xE6\xB5\x8B\xE8\xAF\x95 <|im_start|> 12345 \xF0\x9F\x8C\xB1";
  const Ids expected = t.encode(text);
  std::vector<Ids> results(4);
  std::vector<std::thread> threads;
  for (auto &r : results)
    threads.emplace_back([&t, &text, &r] {
      for (int i = 0; i < 200; ++i)
        r = t.encode(text);
    });
  for (auto &th : threads)
    th.join();
  for (const auto &r : results)
    EXPECT_EQ(r, expected);
}

TEST(Qwen3Vocab, RandomTextRoundTripsToItsNfc) {
  // Code points from blocks that exercise every stage: ASCII, combining
  // marks (NFC), Hangul jamo (NFC composition), CJK, emoji (4-byte), and
  // the special-token characters.
  const std::vector<std::pair<char32_t, char32_t>> blocks = {
      {0x20, 0x7E},       {0xA0, 0x2FF}, {0x300, 0x36F}, {0x1100, 0x11FF}, {0x4E00, 0x9FFF},
      {0x1F300, 0x1FAFF}, {'<', '<'},    {'|', '|'},     {'\n', '\n'}};
  std::mt19937 rng(7);
  const Tokenizer &t = qwen3_tokenizer();
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const size_t length = rng() % 40;
    for (size_t i = 0; i < length; ++i) {
      const auto &[lo, hi] = blocks[rng() % blocks.size()];
      const char32_t cp = lo + rng() % (hi - lo + 1);
      utf8proc_uint8_t buffer[4];
      const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buffer);
      text.append(reinterpret_cast<const char *>(buffer), static_cast<size_t>(n));
    }
    if (round % 10 == 0)
      text += "<|im_end|>";
    EXPECT_EQ(t.decode(t.encode(text)), nfc(text)) << testing::PrintToString(text);
  }
}

TEST(Qwen3Vocab, RandomBytesEitherRoundTripOrThrow) {
  std::mt19937 rng(11);
  const Tokenizer &t = qwen3_tokenizer();
  size_t rejected = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 12, '\0');
    for (char &b : bytes)
      b = static_cast<char>(rng() % 4 == 0 ? 0x80 + rng() % 0x80 : rng() % 0x80);
    try {
      const auto ids = t.encode(bytes);
      EXPECT_EQ(t.decode(ids), nfc(bytes));
    } catch (const Error &) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_LT(rejected, 2000u);
}

// from_gguf on crafted files ------------------------------------------------

gguf::Array string_array(const std::vector<std::string> &items) {
  gguf::Array a;
  a.element_type = gguf::ValueType::STRING;
  for (const auto &s : items)
    a.items.push_back(gguf::Value{gguf::ValueType::STRING, s});
  return a;
}

std::string from_gguf_error(const gguf::Writer &writer) {
  const std::vector<uint8_t> image = writer.serialize();
  try {
    const auto file = gguf::File::parse(image, "crafted.gguf");
    (void)Tokenizer::from_gguf(file);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Qwen3VocabFromGguf, UnsupportedModelIsReportedFirst) {
  gguf::Writer w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string("tokenizer.ggml.pre", "default");
  const std::string message = from_gguf_error(w);
  EXPECT_NE(message.find("crafted.gguf"), std::string::npos) << message;
  EXPECT_NE(message.find("unsupported tokenizer.ggml.model 'llama'"), std::string::npos) << message;
}

TEST(Qwen3VocabFromGguf, MissingKeysAreNamed) {
  gguf::Writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  std::string message = from_gguf_error(w);
  EXPECT_NE(message.find("tokenizer.ggml.pre"), std::string::npos) << message;
  w.set_string("tokenizer.ggml.pre", "qwen2");
  message = from_gguf_error(w);
  EXPECT_NE(message.find("tokenizer.ggml.tokens"), std::string::npos) << message;
}

TEST(Qwen3VocabFromGguf, WrongValueTypesAreNamed) {
  gguf::Writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  w.set_u32("tokenizer.ggml.tokens", 5);
  const std::string message = from_gguf_error(w);
  EXPECT_NE(message.find("tokenizer.ggml.tokens"), std::string::npos) << message;
}

TEST(Qwen3VocabFromGguf, TinyModelVocabularyLoads) {
  // The golden tiny models carry the first 2,000 BPE tokens plus specials
  // and UNUSED padding rows up to 2,048.
  const auto file = gguf::File::open(data_path("tiny-q1.gguf"));
  const Tokenizer t = Tokenizer::from_gguf(file);
  EXPECT_EQ(t.n_vocab(), 2048);
  EXPECT_EQ(t.eos_id(), 2002);
  EXPECT_EQ(t.im_end_id(), 2002);
  EXPECT_EQ(t.encode("<|im_start|>"), (Ids{2001}));
  EXPECT_EQ(t.token_type(2047), TokenType::Unused);
  EXPECT_EQ(t.decode(Ids{2047}), "");
  // Digits and spaces are among the first 2,000 tokens (hf-cases.json ids).
  EXPECT_EQ(t.encode("1234567890 12 345"),
            (Ids{16, 17, 18, 19, 20, 21, 22, 23, 24, 15, 220, 16, 17, 220, 18, 19, 20}));
}

TEST(Qwen3VocabFromGguf, BadTokenTypeIsNamed) {
  gguf::Writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  w.set_array("tokenizer.ggml.tokens", string_array({"a"}));
  gguf::Array types;
  types.element_type = gguf::ValueType::INT32;
  types.items.push_back(gguf::Value{gguf::ValueType::INT32, int64_t{42}});
  w.set_array("tokenizer.ggml.token_type", types);
  w.set_array("tokenizer.ggml.merges", string_array({}));
  const std::string message = from_gguf_error(w);
  EXPECT_NE(message.find("tokenizer.ggml.token_type'[0]: unknown token type 42"), std::string::npos)
      << message;
}

} // namespace
} // namespace bonsai::test

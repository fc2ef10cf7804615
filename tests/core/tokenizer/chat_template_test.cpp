// Chat template rendering against hand-written expected prompts (following
// Qwen3's Jinja template in tests/data/qwen3-vocab.gguf).
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "bonsai/core/chat_template.hpp"
#include "bonsai/core/error.hpp"
#include "mini_json.hpp"
#include "tokenizer_fixture.hpp"

namespace bonsai::test {
namespace {

using Messages = std::vector<ChatMessage>;

std::string qwen3(const Messages &m, ChatOptions options = {}) {
  return apply_chat_template(ChatTemplateKind::Qwen3ChatML, m, options);
}

TEST(ChatTemplate, SystemAndUserWithGenerationPrompt) {
  const Messages m = {{"system", "Be brief."}, {"user", "Hi"}};
  EXPECT_EQ(qwen3(m), "<|im_start|>system\nBe brief.<|im_end|>\n"
                      "<|im_start|>user\nHi<|im_end|>\n"
                      "<|im_start|>assistant\n");
}

TEST(ChatTemplate, ThinkingOffPrefillsAnEmptyThinkBlock) {
  const Messages m = {{"user", "Hi"}};
  EXPECT_EQ(qwen3(m, {.add_generation_prompt = true, .enable_thinking = false}),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, NoGenerationPrompt) {
  const Messages m = {{"user", "Hi"}};
  EXPECT_EQ(qwen3(m, {.add_generation_prompt = false, .enable_thinking = false}),
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, HistoryReasoningIsStrippedBeforeTheLastQuery) {
  const Messages m = {
      {"user", "2+2?"}, {"assistant", "<think>\nadd them\n</think>\n\n4"}, {"user", "3+3?"}};
  EXPECT_EQ(qwen3(m), "<|im_start|>user\n2+2?<|im_end|>\n"
                      "<|im_start|>assistant\n4<|im_end|>\n"
                      "<|im_start|>user\n3+3?<|im_end|>\n"
                      "<|im_start|>assistant\n");
}

TEST(ChatTemplate, ReasoningAfterTheLastQueryIsKeptAndNormalised) {
  // The final assistant turn always gets a think block, even an empty one.
  const Messages with_reasoning = {{"user", "Q"}, {"assistant", "<think>\n\nwhy\n\n</think>A"}};
  EXPECT_EQ(qwen3(with_reasoning, {.add_generation_prompt = false}),
            "<|im_start|>user\nQ<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nwhy\n</think>\n\nA<|im_end|>\n");
  const Messages without = {{"user", "Q"}, {"assistant", "A"}};
  EXPECT_EQ(qwen3(without, {.add_generation_prompt = false}),
            "<|im_start|>user\nQ<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nA<|im_end|>\n");
}

TEST(ChatTemplate, ToolResultsShareOneUserTurnAndAreNotQueries) {
  const Messages m = {{"user", "weather?"},
                      {"assistant", "<think>need tool</think>calling"},
                      {"tool", "sunny"},
                      {"tool", "22C"},
                      {"assistant", "<think>done</think>It is sunny."}};
  // The last real query is message 0, so both assistant turns keep their
  // reasoning; the last one is also the final message.
  EXPECT_EQ(qwen3(m, {.add_generation_prompt = false}),
            "<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nneed tool\n</think>\n\ncalling<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n"
            "<tool_response>\n22C\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\ndone\n</think>\n\nIt is sunny.<|im_end|>\n");
}

TEST(ChatTemplate, UnknownRoleIsAnError) {
  const Messages m = {{"narrator", "Once"}};
  EXPECT_THROW(qwen3(m), Error);
}

TEST(ChatTemplate, FallbackIsPlainChatML) {
  const Messages m = {{"system", "S"}, {"narrator", "N"}, {"assistant", "<think>x</think>y"}};
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::ChatMLFallback, m,
                                {.add_generation_prompt = true, .enable_thinking = false}),
            "<|im_start|>system\nS<|im_end|>\n"
            "<|im_start|>narrator\nN<|im_end|>\n"
            "<|im_start|>assistant\n<think>x</think>y<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, MatchesTheHfChatCase) {
  const auto doc = mini_json::parse_file(data_path("tokenizer/hf-cases.json"));
  const std::string &expected = doc[1]["text"].as_string();
  const Messages m = {{"system", "You are a helpful assistant."},
                      {"user", "What is 1-bit quantization?"}};
  const std::string prompt = qwen3(m, {.add_generation_prompt = true, .enable_thinking = false});
  EXPECT_EQ(prompt, expected);
  EXPECT_EQ(qwen3_tokenizer().encode(prompt), doc[1]["ids"].as_int_vector<int32_t>());
}

TEST(ChatTemplateDetect, RecognisesQwen3AndWarnsOtherwise) {
  std::vector<std::string> warnings;
  const ChatWarningSink sink = [&](std::string_view w) { warnings.emplace_back(w); };

  EXPECT_EQ(detect_chat_template(qwen3_tokenizer().chat_template(), sink),
            ChatTemplateKind::Qwen3ChatML);
  EXPECT_TRUE(warnings.empty());

  EXPECT_EQ(detect_chat_template("", sink), ChatTemplateKind::ChatMLFallback);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no chat template"), std::string::npos) << warnings[0];

  const std::string chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content "
                             "}}<|im_end|>\n{% endfor %}";
  EXPECT_EQ(detect_chat_template(chatml, sink), ChatTemplateKind::ChatMLFallback);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("<think>"), std::string::npos) << warnings[1];

  EXPECT_EQ(detect_chat_template("[INST] {{ m }} [/INST]", sink), ChatTemplateKind::ChatMLFallback);
  EXPECT_EQ(warnings.size(), 3u);

  // No sink: still works, silently.
  EXPECT_EQ(detect_chat_template("[INST]"), ChatTemplateKind::ChatMLFallback);
}

} // namespace
} // namespace bonsai::test

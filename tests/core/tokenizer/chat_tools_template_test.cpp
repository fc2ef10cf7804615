// Tools and tool calls in the rendered prompt, against expected text written
// by hand from Qwen3's Jinja template (tests/data/qwen3-vocab.gguf): the tool
// list in the system turn, calls as <tool_call> blocks after the assistant's
// content, results as <tool_response> in one user turn.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bonsai/core/chat_template.hpp"

namespace bonsai {
namespace {

using Messages = std::vector<ChatMessage>;

const std::string kTool =
    R"({"type": "function", "function": {"name": "get_weather", "parameters": {}}})";

const std::string kToolsTurnTail =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
    kTool +
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

ChatOptions with_tool() {
  ChatOptions options;
  options.tools = {kTool};
  return options;
}

TEST(ChatTools, ToolsFollowTheSystemMessageInItsTurn) {
  const Messages m = {{"system", "Be brief."}, {"user", "Weather in Paris?"}};
  for (ChatTemplateKind kind : {ChatTemplateKind::Qwen3ChatML, ChatTemplateKind::ChatMLFallback})
    EXPECT_EQ(apply_chat_template(kind, m, with_tool()),
              "<|im_start|>system\nBe brief.\n\n" + kToolsTurnTail +
                  "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTools, WithoutASystemMessageTheToolsOpenTheirOwnTurn) {
  const Messages m = {{"user", "Hi"}};
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::Qwen3ChatML, m, with_tool()),
            "<|im_start|>system\n" + kToolsTurnTail +
                "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTools, AnAgentLoopRendersCallsAndResults) {
  Messages m = {{"user", "Weather in Paris and Rome?"},
                {"assistant",
                 "Let me check.",
                 {{"get_weather", R"({"city": "Paris"})"}, {"get_weather", R"({"city": "Rome"})"}}},
                {"tool", "18C"},
                {"tool", "24C"}};
  // The turn after the last query has no reasoning and is not the last
  // message: the template writes its content as it is, then the calls. The
  // plain ChatML renderer writes tools, calls and results the same way.
  for (ChatTemplateKind kind : {ChatTemplateKind::Qwen3ChatML, ChatTemplateKind::ChatMLFallback})
    EXPECT_EQ(apply_chat_template(kind, m, with_tool()),
            "<|im_start|>system\n" + kToolsTurnTail +
                "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
                "<|im_start|>assistant\nLet me check.\n"
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                "</tool_call>\n"
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n"
                "</tool_call><|im_end|>\n"
                "<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n"
                "<tool_response>\n24C\n</tool_response><|im_end|>\n"
                "<|im_start|>assistant\n");
}

TEST(ChatTools, ACallWithoutContentStartsTheTurn) {
  Messages m = {{"user", "Hi"}, {"assistant", "", {{"f", "{}"}}}, {"user", "Thanks"}};
  EXPECT_EQ(apply_chat_template(ChatTemplateKind::Qwen3ChatML, m, {.add_generation_prompt = false}),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n"
            "</tool_call><|im_end|>\n"
            "<|im_start|>user\nThanks<|im_end|>\n");
}

} // namespace
} // namespace bonsai

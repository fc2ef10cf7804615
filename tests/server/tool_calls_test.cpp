// Tool calls found in a streamed reply (server/src/reply/tool_calls.hpp): every cut
// of the text gives the same calls and content; expectations by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reply/tool_calls.hpp"

namespace {

using bonsai::server::ContentPiece;
using bonsai::server::ToolCallSplit;

ContentPiece run(const std::vector<std::string> &pieces) {
  ToolCallSplit split;
  ContentPiece all;
  const auto take = [&](ContentPiece p) {
    all.content += p.content;
    for (auto &call : p.calls)
      all.calls.push_back(std::move(call));
  };
  for (const std::string &piece : pieces)
    take(split.feed(piece));
  take(split.finish());
  return all;
}

struct Call {
  std::string name;
  nlohmann::json arguments;
};

void expect_calls(const std::string &text, const std::string &content,
                  const std::vector<Call> &calls) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const ContentPiece got = run({text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(got.content, content) << "cut at " << cut << " of: " << text;
    ASSERT_EQ(got.calls.size(), calls.size()) << "cut at " << cut << " of: " << text;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(got.calls[i].name, calls[i].name);
      EXPECT_EQ(nlohmann::json::parse(got.calls[i].arguments), calls[i].arguments);
      EXPECT_EQ(got.calls[i].id.rfind("call_", 0), 0u);
      EXPECT_EQ(got.calls[i].id.size(), 5u + 24u);
    }
  }
}

TEST(ToolCallSplit, OneCallIsACallAndNoContent) {
  expect_calls("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
               "</tool_call>",
               "", {{"get_weather", {{"city", "Paris"}}}});
}

TEST(ToolCallSplit, TextBeforeAndBetweenCallsStaysContent) {
  expect_calls("Checking both.\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n"
               "<tool_call>{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}</tool_call>\n",
               "Checking both.", {{"a", nlohmann::json::object()}, {"b", {{"x", {1, 2}}}}});
}

TEST(ToolCallSplit, QuotedArgumentsAreTheObjectTheyHold) {
  expect_calls("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"k\\\": 1}\"}</tool_call>", "",
               {{"f", {{"k", 1}}}});
}

// Arguments are a JSON object for the client to parse: quoted text that is
// not one, or a value of another type, leaves the block as content.
TEST(ToolCallSplit, ArgumentsThatAreNoObjectMakeNoCall) {
  for (const std::string block :
       {"<tool_call>{\"name\": \"f\", \"arguments\": \")ill\u00e9far\"}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": \"[1]\"}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": []}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": 2883791}</tool_call>"})
    expect_calls(block, block, {});
}

TEST(ToolCallSplit, ABlockThatDoesNotParseStaysContent) {
  expect_calls("Here: <tool_call>{not json}</tool_call> done",
               "Here: <tool_call>{not json}</tool_call> done", {});
  expect_calls("<tool_call>{\"arguments\": {}}</tool_call>",
               "<tool_call>{\"arguments\": {}}</tool_call>", {}); // no name
}

TEST(ToolCallSplit, AnUnclosedCallCountsWhenItsJsonIsWhole) {
  expect_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", "",
               {{"f", nlohmann::json::object()}});
  expect_calls("<tool_call>{\"name\": \"f\", \"argu", "<tool_call>{\"name\": \"f\", \"argu", {});
}

TEST(ToolCallSplit, AReplyWithoutCallsIsUnchanged) {
  expect_calls("  Hello,\n\nworld  \n", "  Hello,\n\nworld  \n", {});
  expect_calls("a <tool_ca", "a <tool_ca", {});
}

TEST(ToolCallSplit, DeepNestingIsContentNotACrash) {
  const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": " + std::string(5000, '[') +
                           std::string(5000, ']') + "}</tool_call>";
  const ContentPiece got = run({deep});
  EXPECT_TRUE(got.calls.empty());
  EXPECT_EQ(got.content, deep);
}

} // namespace

namespace {

TEST(ToolCallSplit, TheXmlFormOfQwen35TemplatesIsACall) {
  expect_calls("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
               "<parameter=days>\n3\n</parameter>\n<parameter=units>\n{\"temp\": \"C\"}\n"
               "</parameter>\n</function>\n</tool_call>",
               "", {{"get_weather", {{"city", "Paris"}, {"days", 3}, {"units", {{"temp", "C"}}}}}});
  expect_calls("<tool_call><function=ping></function></tool_call>", "",
               {{"ping", nlohmann::json::object()}});
}

TEST(ToolCallSplit, ABrokenXmlCallStaysContent) {
  const std::string broken = "<tool_call><function=f><parameter=x>1</function></tool_call>";
  expect_calls(broken, broken, {});
}

} // namespace

// n > 1: each choice is its own sequence, seeded seed + k, so choice k is
// the reply a single request with seed + k gets; streamed, every chunk names
// its choice and each choice ends on its own.
#include <gtest/gtest.h>

#include <map>

#include "server_test_support.hpp"

namespace {

using namespace server_test;

class ServerChoices : public ::testing::Test {
protected:
  static void SetUpTestSuite() { server_ = new RunningServer(server_options(3)); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static json chat(const json &extra) {
    json body = {{"messages", {{{"role", "user"}, {"content", "Tell a story"}}}},
                 {"max_tokens", 12},
                 {"temperature", 1.0}};
    body.update(extra);
    const auto r = post(*server_, "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return parse(r.body);
  }
  static inline RunningServer *server_ = nullptr;
};

TEST_F(ServerChoices, ChoiceKIsTheReplyOfSeedPlusK) {
  const json many = chat({{"n", 3}, {"seed", 40}});
  ASSERT_EQ(many["choices"].size(), 3u);
  int64_t tokens = 0;
  for (int k = 0; k < 3; ++k) {
    const json choice = many["choices"][k];
    EXPECT_EQ(choice["index"], k);
    const json single = chat({{"seed", 40 + k}});
    EXPECT_EQ(choice["message"], single["choices"][0]["message"]) << "choice " << k;
    tokens += single["usage"]["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(many["usage"]["completion_tokens"], tokens);
  EXPECT_EQ(many["usage"]["prompt_tokens"], chat(json::object())["usage"]["prompt_tokens"]);
  EXPECT_NE(many["choices"][0]["message"], many["choices"][1]["message"]);
}

TEST_F(ServerChoices, StreamedChoicesEachEndOnTheirOwn) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Tell a story"}}}},
                     {"max_tokens", 12},
                     {"temperature", 1.0},
                     {"seed", 40},
                     {"n", 2},
                     {"stream", true}};
  const Streamed s = post_stream(*server_, "/v1/chat/completions", body.dump());
  ASSERT_EQ(s.status, 200);
  std::map<int, std::string> text;
  std::map<int, int> finishes, roles;
  for (const std::string &event : s.events) {
    if (event == "[DONE]")
      continue;
    const json choice = parse(event)["choices"][0];
    const int k = choice["index"].get<int>();
    if (choice["delta"].contains("role"))
      ++roles[k];
    if (choice["delta"].contains("content"))
      text[k] += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null())
      ++finishes[k];
  }
  EXPECT_EQ(s.events.back(), "[DONE]");
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(roles[k], 1) << k;
    EXPECT_EQ(finishes[k], 1) << k;
    const json single = chat({{"seed", 40 + k}});
    EXPECT_EQ(text[k], single["choices"][0]["message"]["content"]) << k;
  }
}

TEST_F(ServerChoices, CompletionsTakeNToo) {
  const auto r =
      post(*server_, "/v1/completions",
           R"({"prompt": "Once", "max_tokens": 5, "n": 2, "seed": 3, "temperature": 1})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json choices = parse(r.body)["choices"];
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[1]["index"], 1);
  EXPECT_TRUE(choices[1]["text"].is_string());
}

TEST_F(ServerChoices, OutOfRangeIsRefused) {
  for (const char *n : {"0", "17", "2.5"}) {
    const auto r =
        post(*server_, "/v1/chat/completions",
             std::string(R"({"messages": [{"role": "user", "content": "x"}], "n": )") + n + "}");
    EXPECT_EQ(r.status, 400) << n << r.body;
    EXPECT_EQ(parse(r.body)["error"]["param"], "n") << r.body;
  }
}

} // namespace

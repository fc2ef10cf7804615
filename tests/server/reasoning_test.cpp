// Reasoning separation end to end: a fake plugin (tests/fake_plugins,
// "scripted") makes the model reply "<think>Plan it</think>\n\nSure thing"
// then <|im_end|>, token by token; the server must put the think block in
// reasoning_content (or where reasoning_format says), whole and streamed.
#include <gtest/gtest.h>

#include <cstdlib>

#include "server_test_support.hpp"

namespace {

using namespace server_test;

// tiny-q1's ids of <think> P l an ␠it </think> \n\n S ure ␠th ing <|im_end|>.
constexpr const char *kScript = "2003,47,75,276,432,2004,271,50,552,270,287,2002";

struct ScriptedServer {
  ScriptedServer() {
    setenv("BONSAI_FAKE_SCRIPT", kScript, 1);
    server = std::make_unique<bonsai::server::Server>(server_options(2), [] {
      bonsai::EngineOptions options = engine_options(256);
      options.backend = std::string(BONSAI_FAKE_PLUGIN_DIR) + "/libbonsai_scripted.so";
      options.plugin_options.clear();
      return bonsai::Engine::open(data_path("tiny-q1.gguf"), options);
    });
    server->wait_loaded();
    EXPECT_TRUE(server->ready()) << server->load_error();
  }
  ~ScriptedServer() { unsetenv("BONSAI_FAKE_SCRIPT"); }
  std::unique_ptr<bonsai::server::Server> server;
};

httplib::Response chat(const ScriptedServer &s, json extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", "What is 2 + 2?"}}}}};
  body.update(extra);
  httplib::Client client("127.0.0.1", s.server->port());
  client.set_read_timeout(60, 0);
  auto result = client.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!result) {
    httplib::Response failed;
    failed.status = -1;
    return failed;
  }
  return result.value();
}

TEST(ServerReasoning, ThinkBlockGoesToReasoningContent) {
  const ScriptedServer s;
  const auto r = chat(s);
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "Plan it");
  EXPECT_EQ(message["content"], "Sure thing");
  EXPECT_EQ(parse(r.body)["choices"][0]["finish_reason"], "stop");
}

TEST(ServerReasoning, StreamedReasoningComesAsItsOwnDeltas) {
  const ScriptedServer s;
  const auto r = chat(s, {{"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::string reasoning, content;
  bool reasoning_before_content = true;
  for (const std::string &data : sse_data(r.body)) {
    if (data == "[DONE]")
      break;
    const json delta = parse(data)["choices"][0]["delta"];
    if (delta.contains("reasoning_content"))
      reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content")) {
      content += delta["content"].get<std::string>();
      if (!content.empty() && delta.contains("reasoning_content"))
        reasoning_before_content = false;
    }
  }
  EXPECT_EQ(reasoning, "Plan it");
  EXPECT_EQ(content, "Sure thing");
  EXPECT_TRUE(reasoning_before_content);
}

TEST(ServerReasoning, FormatNoneLeavesTheBlockInline) {
  const ScriptedServer s;
  const auto r = chat(s, {{"reasoning_format", "none"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["content"], "<think>Plan it</think>\n\nSure thing");
  EXPECT_FALSE(message.contains("reasoning_content"));
}

TEST(ServerReasoning, FormatReasoningNamesTheFieldReasoning) {
  const ScriptedServer s;
  const auto r = chat(s, {{"reasoning_format", "reasoning"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning"], "Plan it");
  EXPECT_FALSE(message.contains("reasoning_content"));
  EXPECT_EQ(message["content"], "Sure thing");
}

TEST(ServerReasoning, UnknownFormatIsABadRequestNamingTheField) {
  const ScriptedServer s;
  const auto r = chat(s, {{"reasoning_format", "everything"}});
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(parse(r.body)["error"]["param"], "reasoning_format");
  EXPECT_NE(parse(r.body)["error"]["message"].get<std::string>().find("\"everything\""),
            std::string::npos);
}

} // namespace

// The compatibility policy (docs/server.md, "Compatibility"), the same on
// every API: a field bonsai does not know, at any depth, is ignored and named
// in the Bonsai-Ignored-Fields header; a hosted tool or an image is left out
// with a Bonsai-Warning; a known field bonsai cannot honour and an unknown
// role keep their 400; and no limit is loosened by the leniency.
#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "scripted_server.hpp"

namespace {

using namespace server_test;

const json kUser = {{{"role", "user"}, {"content", "Hi"}}};

httplib::Response post_api(const ScriptedServer &s, const std::string &path, const json &body) {
  return post_with(s.server->port(), path, body);
}

// Every API takes a request with unknown fields at the top and inside, and
// names each of them.
TEST(Compatibility, every_api_ignores_unknown_fields_and_names_them) {
  const ScriptedServer s(script_of("Hello.<|im_end|>"));
  struct Case {
    std::string path;
    json body;
    std::string ignored;
  };
  const Case cases[] = {
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", "Hi"}, {"cache_hint", 1}}}},
        {"max_tokens", 4},
        {"stream_options_x", true}},
       "stream_options_x, messages[0].cache_hint"},
      {"/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4}, {"temprature", 0.5}}, "temprature"},
      {"/v1/responses",
       {{"input", "Hi"},
        {"max_output_tokens", 4},
        {"client_metadata", {{"session_id", "s"}}},
        {"reasoning", {{"summary", "auto"}, {"future", 1}}},
        {"brand_new", true}},
       "brand_new, reasoning.future"},
      {"/v1/messages",
       {{"model", "claude-opus-5-5"},
        {"max_tokens", 4},
        {"messages", {{{"role", "user"}, {"content", "Hi"}, {"note", "x"}}}},
        {"output_config", {{"effort", "medium"}}},
        {"speed", "fast"}},
       "speed, messages[0].note"},
      {"/api/chat",
       {{"model", "m"},
        {"stream", false},
        {"messages", kUser},
        {"options", {{"num_predict", 4}, {"new_sampler", 2}}},
        {"truncate", true}},
       "truncate, options.new_sampler"},
      {"/api/generate",
       {{"model", "m"},
        {"stream", false},
        {"prompt", "Hi"},
        {"options", {{"num_predict", 4}}},
        {"shift", true}},
       "shift"},
  };
  for (const Case &c : cases) {
    const auto r = post_api(s, c.path, c.body);
    EXPECT_EQ(r.status, 200) << c.path << " " << r.body;
    EXPECT_EQ(r.get_header_value("Bonsai-Ignored-Fields"), c.ignored) << c.path;
  }
  // Known fields only: no header.
  const auto plain = post_api(s, "/v1/chat/completions", {{"messages", kUser}, {"max_tokens", 4}});
  EXPECT_EQ(plain.status, 200);
  EXPECT_FALSE(plain.has_header("Bonsai-Ignored-Fields"));
  EXPECT_FALSE(plain.has_header("Bonsai-Warning"));
}

// The header names a few dozen fields at most, each printable and short: a
// body of thousands of unknown names cannot make a header of them.
TEST(Compatibility, the_header_is_bounded_and_printable) {
  const ScriptedServer s(script_of("Hello.<|im_end|>"));
  json body = {{"messages", kUser}, {"max_tokens", 2}};
  for (int i = 0; i < 500; ++i)
    body["unknown_" + std::to_string(1000 + i)] = i;
  body[std::string("bad\r\nX-Injected: 1")] = 1;
  body[std::string(300, 'n')] = 1;
  const auto r = post_api(s, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string header = r.get_header_value("Bonsai-Ignored-Fields");
  EXPECT_FALSE(r.has_header("X-Injected"));
  EXPECT_LE(header.size(), 2100u);
  EXPECT_NE(header.find("unknown_1000"), std::string::npos) << header;
  EXPECT_NE(header.find("more)"), std::string::npos) << header;
  for (const char c : header)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
}

// Hosted tools run on the vendor's side: left out of the prompt (the same
// prompt as without them) with a warning naming each.
TEST(Compatibility, hosted_tools_are_left_out_with_a_warning) {
  const ScriptedServer s(script_of("Hello.<|im_end|>"));
  const json function_tool = {
      {"type", "function"}, {"name", "get_weather"}, {"parameters", kWeatherParameters}};
  const auto with_hosted = post_api(s, "/v1/responses",
                                    {{"input", "Hi"},
                                     {"max_output_tokens", 2},
                                     {"tools",
                                      {function_tool,
                                       {{"type", "web_search"}},
                                       {{"type", "code_interpreter"}, {"container", "a"}}}}});
  const auto without = post_api(
      s, "/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 2}, {"tools", {function_tool}}});
  ASSERT_EQ(with_hosted.status, 200) << with_hosted.body;
  ASSERT_EQ(without.status, 200) << without.body;
  const auto prompt = [](const httplib::Response &r) {
    const json usage = parse(r.body)["usage"];
    return usage["input_tokens"].get<int>();
  };
  EXPECT_EQ(prompt(with_hosted), prompt(without));
  EXPECT_NE(with_hosted.get_header_value("Bonsai-Warning", 0).find("tools[1]"), std::string::npos);
  EXPECT_NE(with_hosted.get_header_value("Bonsai-Warning", 1).find("code_interpreter"),
            std::string::npos);
  // Chat Completions and Messages the same way.
  const auto chat = post_api(
      s, "/v1/chat/completions",
      {{"messages", kUser}, {"max_tokens", 2}, {"tools", {{{"type", "web_search_preview"}}}}});
  EXPECT_EQ(chat.status, 200) << chat.body;
  EXPECT_NE(chat.get_header_value("Bonsai-Warning").find("web_search_preview"), std::string::npos);
  const auto messages =
      post_api(s, "/v1/messages",
               {{"max_tokens", 2},
                {"messages", kUser},
                {"tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}}});
  EXPECT_EQ(messages.status, 200) << messages.body;
  EXPECT_NE(messages.get_header_value("Bonsai-Warning").find("web_search_20250305"),
            std::string::npos);
}

// An image (or a file, audio) becomes a note in the prompt: the prompt is
// the one with the note written where the part stood.
TEST(Compatibility, images_become_a_note_where_they_stood) {
  const ScriptedServer s(script_of("Hello.<|im_end|>"));
  const std::string note =
      "[an image was here; it was left out because this model reads text only]";
  const auto count = [&](const json &content) {
    const auto r = post_with(s.server->port(), "/v1/messages/count_tokens",
                             {{"messages", {{{"role", "user"}, {"content", content}}}}});
    EXPECT_EQ(r.status, 200) << r.body;
    return parse(r.body)["input_tokens"].get<int>();
  };
  const json with_image = {{{"type", "text"}, {"text", "Look:"}},
                           {{"type", "image"}, {"source", {{"type", "base64"}, {"data", "AAAA"}}}}};
  const json with_note = {{{"type", "text"}, {"text", "Look:"}},
                          {{"type", "text"}, {"text", note}}};
  EXPECT_EQ(count(with_image), count(with_note));
  // The same note on the other APIs, and a warning naming the part.
  const auto chat = post_api(
      s, "/v1/chat/completions",
      {{"max_tokens", 2},
       {"messages",
        {{{"role", "user"},
          {"content",
           {{{"type", "text"}, {"text", "Look:"}},
            {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}}}}}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_NE(chat.get_header_value("Bonsai-Warning").find("messages[0].content[1]"),
            std::string::npos);
  const auto expected = post_api(
      s, "/v1/chat/completions",
      {{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", "Look:" + note}}}}});
  EXPECT_EQ(parse(chat.body)["usage"]["prompt_tokens"],
            parse(expected.body)["usage"]["prompt_tokens"]);
  const auto ollama =
      post_api(s, "/api/chat",
               {{"model", "m"},
                {"stream", false},
                {"options", {{"num_predict", 2}}},
                {"messages", {{{"role", "user"}, {"content", "Look:"}, {"images", {"AAAA"}}}}}});
  ASSERT_EQ(ollama.status, 200) << ollama.body;
  EXPECT_NE(ollama.get_header_value("Bonsai-Warning").find("messages[0].images[0]"),
            std::string::npos);
  const auto responses =
      post_api(s, "/v1/responses",
               {{"max_output_tokens", 2},
                {"input",
                 {{{"role", "user"},
                   {"content",
                    {{{"type", "input_text"}, {"text", "Look:"}},
                     {{"type", "input_image"}, {"image_url", "data:image/png;base64,AAAA"}}}}}}}});
  ASSERT_EQ(responses.status, 200) << responses.body;
  EXPECT_NE(responses.get_header_value("Bonsai-Warning").find("an image"), std::string::npos);
}

// What the policy keeps: an unknown role, a known field bonsai cannot honour,
// a wrong type on a known field, and every limit.
TEST(Compatibility, refusals_and_limits_stay) {
  const ScriptedServer s(script_of("Hello.<|im_end|>"));
  struct Case {
    std::string path;
    json body;
    int status;
    std::string text;
  };
  const Case cases[] = {
      {"/v1/chat/completions",
       {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}},
       400,
       "role"},
      {"/v1/messages",
       {{"max_tokens", 2}, {"messages", {{{"role", "tool"}, {"content", "x"}}}}},
       400,
       "role"},
      {"/v1/responses", {{"input", {{{"role", "oracle"}, {"content", "x"}}}}}, 400, "role"},
      {"/v1/responses", {{"input", "x"}, {"store", true}}, 400, "keeps no responses"},
      {"/v1/chat/completions",
       {{"messages", kUser}, {"logit_bias", {{"5", 1}}}},
       400,
       "logit_bias"},
      {"/v1/chat/completions", {{"messages", kUser}, {"max_tokens", "many"}}, 400, "max_tokens"},
      {"/v1/chat/completions", {{"messages", kUser}, {"min_tokens", -1}}, 400, "min_tokens"},
  };
  for (const Case &c : cases) {
    const auto r = post_api(s, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body << " -> " << r.body;
    EXPECT_NE(r.body.find(c.text), std::string::npos) << r.body;
  }
  // Nesting past the limit inside a field nobody reads is still refused.
  json deep = 1;
  for (int i = 0; i < 80; ++i)
    deep = json::array({deep});
  EXPECT_EQ(post_api(s, "/v1/chat/completions", {{"messages", kUser}, {"unknown", deep}}).status,
            400);
  // So are more tools than the limit, a namespace's functions counted.
  json members = json::array();
  for (int i = 0; i < 130; ++i)
    members.push_back({{"type", "function"}, {"name", "f" + std::to_string(i)}});
  const auto many = post_api(
      s, "/v1/responses",
      {{"input", "x"}, {"tools", {{{"type", "namespace"}, {"name", "ns"}, {"tools", members}}}}});
  EXPECT_EQ(many.status, 400) << many.body;
  EXPECT_NE(many.body.find("at most 128"), std::string::npos) << many.body;
}

} // namespace

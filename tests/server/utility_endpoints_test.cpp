// The endpoints clients probe besides the completions (llama-server's
// shapes): /tokenize, /detokenize, /apply-template, /props, and the context
// length in /v1/models, over real sockets against the tiny model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_test_support.hpp"

namespace {

using namespace server_test;

json post_ok(const RunningServer &server, const std::string &path, const json &body) {
  const httplib::Response r = post(server, path, body.dump());
  EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  return parse(r.body);
}

// The 400's error object, or an empty one when the status was not 400.
json bad_request_error(const RunningServer &server, const std::string &path,
                       const std::string &body) {
  const httplib::Response r = post(server, path, body);
  EXPECT_EQ(r.status, 400) << path << " " << body << ": " << r.body;
  return r.status == 400 ? parse(r.body)["error"] : json::object();
}

TEST(UtilityEndpoints, tokenize_pieces_spell_the_text_and_detokenize_inverts_it) {
  const RunningServer server;
  const std::string text = "Hello world, caf\xc3\xa9 na\xc3\xafve \xf0\x9f\x99\x82 12345";
  const json plain = post_ok(server, "/tokenize", {{"content", text}});
  ASSERT_TRUE(plain["tokens"].is_array());
  ASSERT_GT(plain["tokens"].size(), 5u);
  const json pieces = post_ok(server, "/tokenize", {{"content", text}, {"with_pieces", true}});
  ASSERT_EQ(pieces["tokens"].size(), plain["tokens"].size());
  std::string spelled;
  for (size_t i = 0; i < pieces["tokens"].size(); ++i) {
    const json &entry = pieces["tokens"][i];
    EXPECT_EQ(entry["id"], plain["tokens"][i]);
    // A piece that is not whole UTF-8 (part of the emoji) comes as its bytes.
    if (entry["piece"].is_string())
      spelled += entry["piece"].get<std::string>();
    else
      for (const json &byte : entry["piece"])
        spelled += static_cast<char>(byte.get<int>());
  }
  EXPECT_EQ(spelled, text);
  const json back = post_ok(server, "/detokenize", {{"tokens", plain["tokens"]}});
  EXPECT_EQ(back["content"], text);
  EXPECT_EQ(post_ok(server, "/detokenize", {{"tokens", json::array()}})["content"], "");
}

TEST(UtilityEndpoints, marker_text_is_one_control_token_unless_parse_special_is_off) {
  const RunningServer server;
  const json special =
      post_ok(server, "/tokenize", {{"content", "<|im_start|>user"}, {"with_pieces", true}});
  ASSERT_EQ(special["tokens"].size(), 2u);
  EXPECT_EQ(special["tokens"][0]["piece"], "<|im_start|>");
  EXPECT_EQ(special["tokens"][1]["piece"], "user");
  const json plain =
      post_ok(server, "/tokenize",
              {{"content", "<|im_start|>user"}, {"parse_special", false}, {"with_pieces", true}});
  EXPECT_GT(plain["tokens"].size(), 2u);
  for (const json &entry : plain["tokens"])
    EXPECT_NE(entry["piece"], "<|im_start|>");
}

TEST(UtilityEndpoints, apply_template_writes_the_chatml_prompt) {
  const RunningServer server;
  const json messages = json::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
  const std::string turns =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n";
  EXPECT_EQ(post_ok(server, "/apply-template", {{"messages", messages}})["prompt"],
            turns + "<|im_start|>assistant\n");
  EXPECT_EQ(post_ok(server, "/apply-template",
                    {{"messages", messages}, {"add_generation_prompt", false}})["prompt"],
            turns);
  // The tiny model's template is plain ChatML (not Qwen3's, which would
  // pre-fill an empty think block with thinking off): nothing to add there,
  // but the switch is read and checked like the completions'.
  EXPECT_EQ(
      bad_request_error(server, "/apply-template",
                        json({{"messages", messages}, {"enable_thinking", "no"}}).dump())["param"],
      "enable_thinking");
}

TEST(UtilityEndpoints, props_and_models_state_the_context_and_what_requests_may_ask) {
  const RunningServer server; // parallel 2, n_ctx 512
  httplib::Client client = server.client();
  const auto props = client.Get("/props");
  ASSERT_TRUE(props);
  ASSERT_EQ(props->status, 200) << props->body;
  const json p = parse(props->body);
  EXPECT_EQ(p["model"], "tiny-q1");
  EXPECT_EQ(p["n_ctx"], 512);
  EXPECT_EQ(p["default_generation_settings"]["n_ctx"], 512);
  EXPECT_EQ(p["total_slots"], 2);
  EXPECT_EQ(p["n_vocab"], 2048);
  EXPECT_TRUE(p["model_path"].get<std::string>().ends_with("tiny-q1.gguf"));
  EXPECT_EQ(p["capabilities"]["chat"], true);
  EXPECT_EQ(p["capabilities"]["tools"], true);     // auto and none; required needs constraints
  EXPECT_EQ(p["capabilities"]["reasoning"], true); // reasoning_content
  EXPECT_EQ(p["capabilities"]["json_schema"], true);
  EXPECT_EQ(p["capabilities"]["logprobs"], true);
  const auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  const json model = parse(models->body)["data"][0];
  EXPECT_EQ(model["context_length"], 512);
  EXPECT_EQ(model["meta"]["n_ctx"], 512);
  EXPECT_EQ(model["meta"]["n_vocab"], 2048);
  EXPECT_EQ(model["meta"]["n_params"], 14685696);
}

TEST(UtilityEndpoints, bad_bodies_get_a_400_naming_the_field) {
  const RunningServer server;
  EXPECT_EQ(bad_request_error(server, "/tokenize", "{}")["param"], "content");
  EXPECT_EQ(bad_request_error(server, "/tokenize", R"({"content": 5})")["param"], "content");
  // An unknown field is ignored and named (docs/server.md, "Compatibility").
  const httplib::Response ignored =
      post(server, "/tokenize", R"({"content": "a", "pieces": true})");
  EXPECT_EQ(ignored.status, 200) << ignored.body;
  EXPECT_EQ(ignored.get_header_value("Bonsai-Ignored-Fields"), "pieces");
  EXPECT_EQ(
      bad_request_error(server, "/tokenize", R"({"content": "a", "with_pieces": 1})")["param"],
      "with_pieces");
  EXPECT_EQ(bad_request_error(server, "/tokenize", R"(["content"])")["type"],
            "invalid_request_error");
  EXPECT_EQ(bad_request_error(server, "/tokenize", R"({"content": )")["type"],
            "invalid_request_error");
  EXPECT_EQ(bad_request_error(server, "/detokenize", R"({"tokens": 3})")["param"], "tokens");
  const json out_of_range = bad_request_error(server, "/detokenize", R"({"tokens": [1, 2048]})");
  EXPECT_EQ(out_of_range["param"], "tokens[1]");
  EXPECT_NE(out_of_range["message"].get<std::string>().find("0..2047"), std::string::npos);
  EXPECT_EQ(bad_request_error(server, "/detokenize", R"({"tokens": [-1]})")["param"], "tokens[0]");
  EXPECT_EQ(bad_request_error(server, "/detokenize", R"({"tokens": ["a"]})")["param"], "tokens[0]");
  EXPECT_EQ(bad_request_error(server, "/apply-template", R"({"messages": []})")["param"],
            "messages");
  EXPECT_EQ(bad_request_error(server, "/apply-template",
                              R"({"messages": [{"role": "robot", "content": "x"}]})")["param"],
            "messages[0].role");
  // The method and the media type are checked as for the completions.
  httplib::Client client = server.client();
  const auto get = client.Get("/tokenize");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  const auto form = client.Post("/tokenize", "content=a", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
}

TEST(UtilityEndpoints, with_api_keys_they_need_a_key_and_the_probes_do_not) {
  bonsai::server::ServerOptions options = server_options();
  options.api_keys = {"s3cret"};
  const RunningServer server(options);
  httplib::Client client = server.client();
  for (const char *path : {"/tokenize", "/detokenize", "/apply-template"}) {
    const auto refused = client.Post(path, R"({"content": "a"})", "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401) << path;
  }
  const auto props = client.Get("/props");
  ASSERT_TRUE(props);
  EXPECT_EQ(props->status, 401);
  const httplib::Headers key = {{"Authorization", "Bearer s3cret"}};
  const auto allowed = client.Post("/tokenize", key, R"({"content": "a"})", "application/json");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 200);
  const auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

} // namespace

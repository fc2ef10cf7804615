// bonsai serve on a qwen35 file (gated DeltaNet + gated attention): sequences
// that share a step each keep their own recurrent state, and a prompt served
// from the cache (checkpoint restored) continues exactly as a fresh one.
#include <gtest/gtest.h>

#include <thread>

#include <fstream>

#include "sanitize_utf8.hpp"
#include "server_test_support.hpp"

namespace {

using namespace server_test;
using test_support::sanitize_utf8;

json greedy_body(const std::vector<int32_t> &prompt, size_t n) {
  return {{"model", "tiny-q35-q1"}, {"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}};
}

// `count` greedy completions of `prompt` posted at once (they share steps);
// each reply's text, or its status and body.
std::vector<std::string> concurrent_texts(const RunningServer &server,
                                          const std::vector<int32_t> &prompt, size_t n,
                                          size_t count) {
  std::vector<std::string> texts(count);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < count; ++i)
    clients.emplace_back([&, i] {
      const auto r = post(server, "/v1/completions", greedy_body(prompt, n).dump());
      texts[i] = r.status == 200 ? parse(r.body)["choices"][0]["text"].get<std::string>()
                                 : "status " + std::to_string(r.status) + ": " + r.body;
    });
  for (auto &c : clients)
    c.join();
  return texts;
}

TEST(ServeQwen35, ConcurrentGreedyCompletionsAreTheFloat64Continuation) {
  const Golden golden = load_golden("tiny-q35-q1");
  const RunningServer server(server_options(4), 256, "tiny-q35-q1.gguf");
  const bonsai::Engine engine =
      bonsai::Engine::open(data_path("tiny-q35-q1.gguf"), engine_options(256));
  const std::string want = sanitize_utf8(engine.detokenize(golden.greedy));
  // Three at once share steps (each its own state); a fourth afterwards
  // starts from the prompt cache.
  for (const std::string &text : concurrent_texts(server, golden.prompt, golden.greedy.size(), 3))
    EXPECT_EQ(text, want);
  const auto again =
      post(server, "/v1/completions", greedy_body(golden.prompt, golden.greedy.size()).dump());
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(parse(again.body)["choices"][0]["text"], want);
  // A shorter prompt that is a prefix of the cached one: the state is
  // restored from a checkpoint and the rest runs again.
  const std::vector<int32_t> prefix(golden.prompt.begin(), golden.prompt.begin() + 5);
  const auto shorter = post(server, "/v1/completions", greedy_body(prefix, 6).dump());
  ASSERT_EQ(shorter.status, 200) << shorter.body;
  auto session = engine.create_session();
  bonsai::GenerateRequest request;
  request.prompt_tokens = prefix;
  request.n_predict = 6;
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace();
  EXPECT_EQ(parse(shorter.body)["choices"][0]["text"],
            sanitize_utf8(engine.detokenize(session.generate(request).tokens)));
}

TEST(ServeQwen35, ChatCompletionStreams) {
  const RunningServer server(server_options(2), 256, "tiny-q35-q1.gguf");
  const json body = {{"model", "tiny-q35-q1"},
                     {"messages", {{{"role", "user"}, {"content", "Hello there"}}}},
                     {"max_tokens", 8},
                     {"temperature", 0}, // sampled, a random stop token could end it early
                     {"stream", true}};
  const Streamed s = post_stream(server, "/v1/chat/completions", body.dump());
  EXPECT_EQ(s.status, 200);
  ASSERT_GE(s.events.size(), 2u);
  EXPECT_EQ(s.events.back(), "[DONE]");
  EXPECT_EQ(parse(s.events[s.events.size() - 2])["choices"][0]["finish_reason"], "length");
}

} // namespace

namespace {

using namespace server_test;

// --draft-mtp in bonsai serve: each slot's sequence keeps its own entries of
// the model's MTP layer, the continuous batch verifies every reply's
// proposals, and the greedy replies are the float64 continuation; two at once
// and a prompt from the cache too. /metrics counts the proposals.
TEST(ServeQwen35, TheMtpDraftKeepsTheFloat64Continuation) {
  const Golden golden = load_golden("tiny-q35-q1");
  bonsai::server::ServerOptions options = server_options(2);
  options.draft.mtp = true;
  options.draft.max = 2;
  options.draft.adaptive = false;
  options.draft.p_min = 0;
  const RunningServer server(options, 256, "tiny-q35-q1.gguf");
  const bonsai::Engine engine =
      bonsai::Engine::open(data_path("tiny-q35-q1.gguf"), engine_options(256));
  const std::string want = sanitize_utf8(engine.detokenize(golden.greedy));
  for (const std::string &text : concurrent_texts(server, golden.prompt, golden.greedy.size(), 2))
    EXPECT_EQ(text, want);
  const auto again =
      post(server, "/v1/completions", greedy_body(golden.prompt, golden.greedy.size()).dump());
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(parse(again.body)["choices"][0]["text"], want);
  EXPECT_GT(metric(metrics_page(server), "bonsai_draft_tokens_total"), 0);
}

TEST(ServeQwen35, TheMtpDraftOfAModelWithoutOneFailsTheLoadWithTheReason) {
  bonsai::server::ServerOptions options = server_options(1);
  options.draft.mtp = true;
  const bonsai::server::Server server(options, [] { return open_tiny(); }); // qwen3
  server.wait_loaded();
  EXPECT_FALSE(server.ready());
  EXPECT_NE(server.load_error().find("needs the model's MTP layer"), std::string::npos)
      << server.load_error();
  options.draft_model = [] { return open_tiny(); };
  EXPECT_THROW(bonsai::server::Server(options, [] { return open_tiny(); }),
               bonsai::server::ServerError);
}

} // namespace

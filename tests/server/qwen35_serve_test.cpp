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

TEST(ServeQwen35, ConcurrentGreedyCompletionsAreTheFloat64Continuation) {
  const Golden golden = load_golden("tiny-q35-q1");
  const RunningServer server(server_options(4), 256, "tiny-q35-q1.gguf");
  const bonsai::Engine engine =
      bonsai::Engine::open(data_path("tiny-q35-q1.gguf"), engine_options(256));
  const std::string want = sanitize_utf8(engine.detokenize(golden.greedy));
  // Three at once share steps (each its own state); a fourth afterwards
  // starts from the prompt cache.
  std::vector<std::string> texts(3);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < texts.size(); ++i)
    clients.emplace_back([&, i] {
      const auto r =
          post(server, "/v1/completions", greedy_body(golden.prompt, golden.greedy.size()).dump());
      texts[i] = r.status == 200 ? parse(r.body)["choices"][0]["text"].get<std::string>()
                                 : "status " + std::to_string(r.status) + ": " + r.body;
    });
  for (auto &c : clients)
    c.join();
  for (const std::string &text : texts)
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

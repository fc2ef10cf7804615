// Speculative decoding in bonsai serve (docs/speculative.md): each running
// reply drafts (a draft model, or prompt lookup) and the continuous-batching
// step verifies its proposals. Greedy replies are the model's own, token for
// token, whatever the draft: the float64 reference's greedy continuation is
// the independent expectation, and a draft that always agrees (the model
// itself) and one that mostly does not (other weights, same vocabulary)
// bracket the cases. /metrics counts the proposals and those kept.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sanitize_utf8.hpp"
#include "server_test_support.hpp"

namespace {

using namespace server_test;

// A server whose replies draft with `draft_file` (empty: none) and prompt
// lookup of `ngram` tokens, proposing up to 4 tokens every step.
bonsai::server::ServerOptions drafting(const std::string &draft_file, int32_t ngram,
                                       int32_t parallel = 2) {
  bonsai::server::ServerOptions options = server_options(parallel);
  options.draft.ngram = ngram;
  options.draft.max = 4;
  options.draft.adaptive = false; // measure acceptance, not the policy
  options.draft.p_min = 0;
  if (!draft_file.empty())
    options.draft_model = [draft_file] {
      return bonsai::Engine::open(data_path(draft_file), engine_options(512));
    };
  return options;
}

json greedy_completion(const std::vector<int32_t> &prompt, size_t n, const json &extra = {}) {
  json body = {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}};
  if (extra.is_object())
    body.update(extra);
  return body;
}

// The golden reply's first n tokens as the server sends them (invalid UTF-8
// replaced).
std::string golden_text(const Golden &golden, size_t n) {
  const bonsai::Engine engine = open_tiny();
  return test_support::sanitize_utf8(engine.detokenize(
      std::span<const int32_t>(golden.greedy).first(std::min(n, golden.greedy.size()))));
}

// Posts the golden prompt for `n` greedy tokens and checks the reply is the
// golden continuation; returns the reply.
json expect_golden_completion(const RunningServer &server, const Golden &golden, size_t n,
                              const json &extra = {}) {
  const auto r = post(server, "/v1/completions", greedy_completion(golden.prompt, n, extra).dump());
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200)
    return json::object();
  const json reply = parse(r.body);
  EXPECT_EQ(reply["choices"][0]["text"], golden_text(golden, n));
  return reply;
}

struct DraftCounts {
  double drafted = 0, kept = 0;
};

DraftCounts draft_counts(const RunningServer &server) {
  const std::string page = metrics_page(server);
  return {metric(page, "bonsai_draft_tokens_total"),
          metric(page, "bonsai_draft_accepted_tokens_total")};
}

TEST(ServeSpeculative, ADraftThatAlwaysAgreesKeepsEveryProposalAndTheGoldenReply) {
  const Golden golden = load_golden();
  const size_t n = golden.greedy.size();
  RunningServer server(drafting("tiny-q1.gguf", 0));
  const json reply = expect_golden_completion(server, golden, n);
  EXPECT_EQ(reply["usage"]["completion_tokens"], n);
  const DraftCounts counts = draft_counts(server);
  // Up to 4 proposals and the step's own token each step: at least
  // (n - 1) * 4 / 5 proposals over the reply, all of them kept.
  EXPECT_GE(counts.drafted, static_cast<double>((n - 1) * 4 / 5) - 4);
  EXPECT_EQ(counts.kept, counts.drafted);
}

TEST(ServeSpeculative, ADraftThatMostlyDisagreesNeverChangesTheReply) {
  const Golden golden = load_golden();
  const size_t n = golden.greedy.size();
  RunningServer server(drafting("tiny-q2.gguf", 0));
  expect_golden_completion(server, golden, n);
  const DraftCounts counts = draft_counts(server);
  EXPECT_GT(counts.drafted, 0);
  EXPECT_LT(counts.kept, counts.drafted);
}

TEST(ServeSpeculative, StreamsOfOneBatchEachDraftAndVerifyOnTheirOwn) {
  // Three streams at once, with prompt lookup and the draft model: each is
  // the reply the server gives it alone without drafting.
  const std::vector<std::vector<int32_t>> prompts = {
      {5, 17, 99, 3, 5, 17, 99, 3, 5, 17}, {1021, 158, 1021, 158, 1021}, {42, 7, 300, 42, 7}};
  std::vector<std::string> expected;
  {
    RunningServer plain(server_options(1));
    for (const auto &prompt : prompts) {
      const auto r = post(plain, "/v1/completions", greedy_completion(prompt, 40).dump());
      ASSERT_EQ(r.status, 200) << r.body;
      expected.push_back(parse(r.body)["choices"][0]["text"].get<std::string>());
    }
  }
  RunningServer server(drafting("tiny-q2.gguf", 2, 3));
  std::vector<std::string> got(prompts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] {
      json body = greedy_completion(prompts[i], 40);
      body["stream"] = true;
      const Streamed s = post_stream(server, "/v1/completions", body.dump());
      for (const std::string &event : s.events)
        if (event != "[DONE]")
          got[i] += parse(event)["choices"][0]["text"].get<std::string>();
    });
  for (std::thread &t : clients)
    t.join();
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(got[i], expected[i]) << "stream " << i;
  EXPECT_GT(draft_counts(server).drafted, 0);
}

TEST(ServeSpeculative, PromptLookupAloneKeepsTheGoldenReply) {
  const Golden golden = load_golden();
  const size_t n = golden.greedy.size();
  RunningServer server(drafting("", 1));
  expect_golden_completion(server, golden, n);
  // The golden reply repeats its own tokens: lookups hit.
  EXPECT_GT(draft_counts(server).drafted, 0);
}

TEST(ServeSpeculative, ConstrainedRepliesDraftAndKeepThePlainReply) {
  // A JSON reply and a required tool call: their tokens follow a grammar,
  // and a proposal is kept where it is the grammar's choice. The model
  // itself drafts, unconstrained: many of its tokens are the grammar's too.
  // (Greedy, the tiny model's replies run to the length, whitespace and all.)
  const json tool = json::parse(R"({"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {
      "zone": {"type": "string"}}, "required": ["zone"], "additionalProperties": false}}})");
  const json messages = {{{"role", "user"}, {"content", "Give me an object."}}};
  const std::vector<json> bodies = {{{"messages", messages},
                                     {"max_tokens", 48},
                                     {"temperature", 0},
                                     {"response_format", {{"type", "json_object"}}}},
                                    {{"messages", messages},
                                     {"max_tokens", 48},
                                     {"temperature", 0},
                                     {"tools", {tool}},
                                     {"tool_choice", "required"}}};
  std::vector<json> expected;
  {
    RunningServer plain(server_options(1));
    for (const json &body : bodies) {
      const auto r = post(plain, "/v1/chat/completions", body.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      expected.push_back(parse(r.body)["choices"][0]);
    }
  }
  RunningServer server(drafting("tiny-q1.gguf", 0));
  for (size_t i = 0; i < bodies.size(); ++i) {
    const auto r = post(server, "/v1/chat/completions", bodies[i].dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = parse(r.body)["choices"][0];
    EXPECT_EQ(choice["message"], expected[i]["message"]) << "request " << i;
    EXPECT_EQ(choice["finish_reason"], expected[i]["finish_reason"]) << "request " << i;
  }
  const DraftCounts counts = draft_counts(server);
  EXPECT_GT(counts.drafted, 0);
  EXPECT_GT(counts.kept, 0);
  EXPECT_LT(counts.kept, counts.drafted); // the grammar refused some
}

TEST(ServeSpeculative, ARequestMayTurnItsDraftsOffButNotRaiseThem) {
  const Golden golden = load_golden();
  RunningServer server(drafting("tiny-q1.gguf", 0));
  expect_golden_completion(server, golden, 12, {{"speculative.n_max", 0}});
  EXPECT_EQ(draft_counts(server).drafted, 0);

  for (const json &bad : {json{{"speculative.n_max", 5}}, json{{"speculative.n_max", -1}},
                          json{{"speculative.n_min", 0}}, json{{"speculative.n_max", "4"}}}) {
    const auto r = post(server, "/v1/completions", greedy_completion(golden.prompt, 4, bad).dump());
    EXPECT_EQ(r.status, 400) << bad.dump() << " " << r.body;
    EXPECT_EQ(parse(r.body)["error"]["param"], bad.begin().key()) << r.body;
  }
}

TEST(ServeSpeculative, ADraftWithAnotherVocabularyFailsTheLoadWithTheReason) {
  // tiny-q1's shape with 2,560 tokens instead of 2,048.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("bonsai-draft-vocab-" + std::to_string(getpid()) + ".gguf"))
                               .string();
  const std::string command = std::string(BONSAI_BIN_DIR) + "/bonsai-gguf make-model --vocab " +
                              data_path("qwen3-vocab.gguf") +
                              " --preset tiny --vocab-size 2560 --seed 3 -o " + path +
                              " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  bonsai::server::ServerOptions options = server_options(2);
  options.draft_model = [path] { return bonsai::Engine::open(path, engine_options(512)); };
  {
    bonsai::server::Server server(options, [] { return open_tiny(); });
    server.wait_loaded();
    EXPECT_FALSE(server.ready());
    EXPECT_NE(server.load_error().find("2560 tokens in its vocabulary, the model 2048"),
              std::string::npos)
        << server.load_error();
  }
  std::filesystem::remove(path);
}

TEST(ServeSpeculative, BadDraftOptionsAreRefusedAtStart) {
  bonsai::server::ServerOptions options = drafting("", 2);
  options.draft.min = 5; // above max 4
  EXPECT_THROW(bonsai::server::Server(options, [] { return open_tiny(); }),
               bonsai::server::ServerError);
  options = drafting("", -1);
  EXPECT_THROW(bonsai::server::Server(options, [] { return open_tiny(); }),
               bonsai::server::ServerError);
}

} // namespace

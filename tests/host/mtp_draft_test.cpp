// qwen35's MTP layer as a draft (docs/speculative.md, "The MTP layer as a
// draft"), through Session::generate and Batch on the CPU plugin's exact
// kernels: the greedy reply is the float64 reference's golden continuation
// whatever the layer proposes; a layer built to agree with the trunk
// (make-model --mtp agree) proposes the trunk's own greedy continuation; and
// sampling keeps the model's distribution (chi-square over whole replies).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <unistd.h>

#include "bonsai/batch.hpp"
#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

// A tiny qwen35 model (the golden shape, 4,096 tokens) written by make-model
// with an MTP layer: `kind` "agree" or "random", the trunk's layers scaled by
// `gain` (0: they write nothing, and the trunk chooses what the agreeing
// layer proposes).
std::string make_model(const std::string &kind, const std::string &gain) {
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("bonsai-mtp-" + kind + "-" + gain + "-" + std::to_string(getpid()) + ".gguf"))
          .string();
  const std::string command = std::string(BONSAI_BIN_DIR) + "/bonsai-gguf make-model --vocab " +
                              data_path("qwen3-vocab.gguf") +
                              " --preset tiny-q35 --vocab-size 4096 --seed 5 --mtp " + kind +
                              " --layer-gain " + gain + " -o " + path + " > /dev/null";
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("failed: " + command);
  return path;
}

bonsai::BatchOptions batch_options(int32_t sequences, bool mtp) {
  bonsai::BatchOptions options;
  options.max_sequences = sequences;
  options.mtp = mtp;
  return options;
}

class MtpDraft : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    models_ = new std::map<std::string, std::string>;
    (*models_)["agree"] = make_model("agree", "0");
    (*models_)["partly"] = make_model("agree", "0.01"); // about half its proposals kept
  }
  static void TearDownTestSuite() {
    for (const auto &[name, path] : *models_)
      std::filesystem::remove(path);
    delete models_;
  }
  static const std::string &model(const char *name) { return models_->at(name); }

  // Drafting with the MTP layer, `max` proposals every step.
  static bonsai::GenerateRequest with_mtp(bonsai::GenerateRequest request, int32_t max = 3) {
    request.draft.mtp = true;
    request.draft.adaptive = false;
    request.draft.max = max;
    request.draft.p_min = 0.0f;
    return request;
  }

  static std::map<std::string, std::string> *models_;
};
std::map<std::string, std::string> *MtpDraft::models_ = nullptr;

TEST_F(MtpDraft, GreedyRepliesAreTheGoldenOnes) {
  for (const char *name : {"tiny-q35-q1", "tiny-q35-q2g64"}) {
    const Greedy golden = load_greedy(std::string(name) + ".ref.greedy.json");
    const bonsai::Engine engine =
        bonsai::Engine::open(data_path(std::string(name) + ".gguf"), cpu_options(256));
    EXPECT_EQ(engine.model().n_mtp_layers, 1);
    auto session = engine.create_session();
    const auto n = static_cast<int32_t>(golden.greedy.size());
    const auto drafted = session.generate(with_mtp(greedy_request(golden.prompt, n), 2));
    EXPECT_EQ(drafted.tokens, golden.greedy) << name;
    EXPECT_GT(drafted.stats.drafted_tokens, 0) << name;
  }
}

TEST_F(MtpDraft, AnAgreeingLayerProposesTheTrunksGreedyContinuation) {
  const bonsai::Engine engine = bonsai::Engine::open(model("agree"), cpu_options(256));
  const std::vector<int32_t> prompt = {11, 400, 23, 1999, 7, 3000};
  auto plain = engine.create_session();
  const auto want = plain.generate(greedy_request(prompt, 40));
  auto session = engine.create_session();
  const auto got = session.generate(with_mtp(greedy_request(prompt, 40), 4));
  EXPECT_EQ(got.tokens, want.tokens);
  // Every proposal is the trunk's choice (its layers write nothing).
  EXPECT_GT(got.stats.drafted_tokens, 20);
  EXPECT_EQ(got.stats.accepted_tokens, got.stats.drafted_tokens);
  EXPECT_LT(got.stats.gen_steps, 20);

  // A batch's sequence proposes the same chain, after a prefix copied too.
  bonsai::Batch batch = engine.create_batch(batch_options(2, true));
  const int32_t a = batch.add_sequence(), b = batch.add_sequence();
  const bonsai::SequenceInput input[] = {{a, prompt}};
  const bonsai::BatchLogits logits = batch.step(input);
  const std::span<const float> row = logits.row(0);
  const auto next = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  ASSERT_EQ(next, want.tokens[0]);
  const std::vector<int32_t> chain(want.tokens.begin() + 1, want.tokens.begin() + 6);
  EXPECT_EQ(batch.draft_mtp(a, next, 5), chain);
  batch.copy_prefix(a, b, static_cast<int32_t>(prompt.size()));
  EXPECT_EQ(batch.draft_mtp(b, next, 5), chain);
  EXPECT_TRUE(batch.draft_mtp(b, next, 0).empty());
}

TEST_F(MtpDraft, APartlyAgreeingLayerNeverChangesTheReply) {
  const bonsai::Engine engine = bonsai::Engine::open(model("partly"), cpu_options(256));
  const std::vector<int32_t> prompt = {11, 400, 23, 1999, 7, 3000};
  auto plain = engine.create_session();
  auto session = engine.create_session();
  const auto want = plain.generate(greedy_request(prompt, 24));
  const auto got = session.generate(with_mtp(greedy_request(prompt, 24), 2));
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_GT(got.stats.accepted_tokens, 0);
  EXPECT_LT(got.stats.accepted_tokens, got.stats.drafted_tokens);
  // The session goes on from exactly the prompt and the reply.
  bonsai::GenerateRequest more = greedy_request({5, 7, 9}, 8);
  more.continue_session = true;
  EXPECT_EQ(plain.generate(more).tokens, session.generate(with_mtp(more, 2)).tokens);
  EXPECT_EQ(plain.position(), session.position());
  // A new prompt that shares a prefix with the cache (the entries of the
  // layer follow the tokens), and prompt lookup beside the layer.
  bonsai::GenerateRequest other = greedy_request({11, 400, 23, 5, 5, 5, 11, 400}, 16);
  bonsai::GenerateRequest both = with_mtp(other, 3);
  both.draft.ngram = 2;
  EXPECT_EQ(plain.generate(other).tokens, session.generate(both).tokens);
}

TEST_F(MtpDraft, LogprobsAndReplyFormatsAreThePlainOnes) {
  const bonsai::Engine engine = bonsai::Engine::open(model("partly"), cpu_options(256));
  bonsai::GenerateRequest request = greedy_request({11, 400, 23, 1999}, 12);
  request.logprobs = true;
  request.top_logprobs = 2;
  auto plain = engine.create_session();
  auto session = engine.create_session();
  const auto want = plain.generate(request);
  const auto got = session.generate(with_mtp(request));
  EXPECT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
  for (size_t i = 0; i < want.logprobs.size(); ++i)
    EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-4) << i;
  bonsai::GenerateRequest json = greedy_request({11, 400, 23, 1999}, 16);
  json.stop_tokens.reset(); // the format ends the reply with an end-of-turn token
  json.format.kind = bonsai::ReplyFormat::Kind::json_object;
  EXPECT_EQ(session.generate(with_mtp(json)).text, plain.generate(json).text);
}

// Sampling with the MTP draft keeps the model's distribution: the first two
// tokens of 1,000 replies at temperature 1 with top-k 3, the second always
// verified against a proposal the layer drew from its own distribution,
// against the model's probabilities of each pair worked out from its
// logits; chi-square with 8 degrees of freedom under 26.1 (p = 0.001). The
// layer agrees with the trunk in part, so proposals are kept and refused.
// The plugin's fast kernels: the figures come from the same ones.
TEST_F(MtpDraft, SamplingWithTheLayerKeepsTheDistribution) {
  bonsai::EngineOptions options = cpu_options(256);
  options.plugin_options.clear();
  const bonsai::Engine engine = bonsai::Engine::open(model("partly"), options);
  const std::vector<int32_t> prompt = {11, 400, 23, 1999, 7};
  // p(t1) and p(t2 | t1) over each step's three best tokens.
  const auto top3 = [](std::span<const float> row) {
    std::vector<std::pair<double, int32_t>> best;
    for (size_t i = 0; i < row.size(); ++i)
      best.emplace_back(row[i], static_cast<int32_t>(i));
    std::partial_sort(best.begin(), best.begin() + 3, best.end(), std::greater<>());
    best.resize(3);
    double z = 0;
    for (const auto &[logit, id] : best)
      z += std::exp(logit - best[0].first);
    std::map<int32_t, double> p;
    for (const auto &[logit, id] : best)
      p[id] = std::exp(logit - best[0].first) / z;
    return p;
  };
  auto probe = engine.create_session();
  const std::map<int32_t, double> first = top3(probe.eval(prompt).row(0));
  std::map<std::pair<int32_t, int32_t>, double> expected;
  for (const auto &[t1, p1] : first) {
    probe.reset();
    std::vector<int32_t> longer = prompt;
    longer.push_back(t1);
    for (const auto &[t2, p2] : top3(probe.eval(longer).row(0)))
      expected[{t1, t2}] = p1 * p2;
  }
  ASSERT_EQ(expected.size(), 9u);

  // Three tokens a reply: the second is the verified one (the first comes
  // from the prompt's row, the third from a kept proposal's row).
  auto session = engine.create_session();
  bonsai::GenerateRequest request = with_mtp(greedy_request(prompt, 3), 1);
  request.sampling.temperature = 1.0f;
  request.sampling.top_k = 3;
  request.sampling.top_p = 1.0f;
  request.sampling.min_p = 0.0f;
  constexpr int kReplies = 1000;
  std::map<std::pair<int32_t, int32_t>, int> counts;
  int drafted = 0, kept = 0;
  for (int i = 0; i < kReplies; ++i) {
    request.sampling.seed = static_cast<uint64_t>(100 + i);
    const auto reply = session.generate(request);
    ASSERT_EQ(reply.tokens.size(), 3u);
    ++counts[{reply.tokens[0], reply.tokens[1]}];
    drafted += reply.stats.drafted_tokens;
    kept += reply.stats.accepted_tokens;
  }
  double chi2 = 0;
  for (const auto &[pair, p] : expected) {
    const double e = p * kReplies;
    const int n = counts.count(pair) ? counts[pair] : 0;
    chi2 += (n - e) * (n - e) / e;
  }
  for (const auto &[pair, n] : counts)
    EXPECT_TRUE(expected.count(pair)) << pair.first << "," << pair.second << " drawn " << n;
  std::cout << "[ mtp      ] chi-square " << chi2 << " (8 degrees of freedom); proposals kept "
            << kept << " of " << drafted << "\n";
  EXPECT_LT(chi2, 26.1);
  EXPECT_EQ(drafted, kReplies);
  EXPECT_GT(kept, kReplies / 10);
  EXPECT_LT(kept, kReplies * 9 / 10);
}

TEST_F(MtpDraft, BadRequestsAreRefusedWithTheReason) {
  const bonsai::Engine qwen3 = bonsai::Engine::open(tiny_q1(), cpu_options(64));
  EXPECT_EQ(qwen3.model().n_mtp_layers, 0);
  auto session = qwen3.create_session();
  try {
    session.generate(with_mtp(greedy_request({1, 2, 3}, 4)));
    ADD_FAILURE() << "a qwen3 model drafted with an MTP layer";
  } catch (const bonsai::InvalidArgument &e) {
    EXPECT_NE(std::string(e.what()).find("model is qwen3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.position(), 0);
  try {
    qwen3.create_batch(batch_options(1, true));
    ADD_FAILURE() << "a qwen3 batch with an MTP layer";
  } catch (const bonsai::InvalidArgument &e) {
    EXPECT_NE(std::string(e.what()).find("create_batch"), std::string::npos) << e.what();
  }

  const bonsai::Engine engine = bonsai::Engine::open(model("agree"), cpu_options(64));
  auto own = engine.create_session();
  auto draft = engine.create_session();
  bonsai::GenerateRequest both = with_mtp(greedy_request({1, 2, 3}, 4));
  both.draft.model = &draft;
  EXPECT_THROW(own.generate(both), bonsai::InvalidArgument);
  bonsai::Batch plain = engine.create_batch(batch_options(1, false));
  const int32_t s = plain.add_sequence();
  EXPECT_THROW(plain.draft_mtp(s, 1, 2), bonsai::InvalidArgument); // made without mtp
  bonsai::Batch batch = engine.create_batch(batch_options(1, true));
  const int32_t t = batch.add_sequence();
  EXPECT_THROW(batch.draft_mtp(t, engine.n_vocab(), 2), bonsai::InvalidArgument);
  EXPECT_THROW(batch.draft_mtp(t, 1, -1), bonsai::InvalidArgument);
  EXPECT_THROW(batch.draft_mtp(t, 1, 2, 1.5f), bonsai::InvalidArgument);
  EXPECT_THROW(batch.draft_mtp(t + 1, 1, 2), bonsai::InvalidArgument);
}

} // namespace

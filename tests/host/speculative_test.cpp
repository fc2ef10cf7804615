// Speculative decoding with a prompt-lookup draft (docs/speculative.md): the
// greedy reply is the model's own, token for token, whatever the draft
// proposes; the golden greedy continuation of the float64 reference is the
// independent expectation.
#include <gtest/gtest.h>

#include "bonsai/engine.hpp"
#include "bonsai/generation.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

class Speculative : public ::testing::Test {
protected:
  void SetUp() override {
    golden_ = load_greedy("tiny-q1.ref.greedy.json");
    engine_ = std::make_unique<bonsai::Engine>(bonsai::Engine::open(tiny_q1(), cpu_options(256)));
  }
  bonsai::GenerateResult run(std::vector<int32_t> prompt, int32_t n, int32_t ngram,
                             float temperature = 0.0f, uint64_t seed = 1) {
    auto session = engine_->create_session();
    bonsai::GenerateRequest request;
    request.prompt_tokens = std::move(prompt);
    request.n_predict = n;
    request.sampling.temperature = temperature;
    request.sampling.seed = seed;
    request.stop_tokens.emplace();
    request.draft.ngram = ngram;
    request.draft.max = 6;
    return session.generate(request);
  }
  // The golden prompt, sampled at temperature 1 with every truncation off
  // (the row's softmax is the distribution), no stop token, no limit.
  bonsai::GenerateRequest plain_sampling_request() const {
    bonsai::GenerateRequest request;
    request.prompt_tokens = golden_.prompt;
    request.n_predict = -1;
    request.stop_tokens.emplace();
    request.sampling.temperature = 1.0f;
    request.sampling.top_k = 0;
    request.sampling.top_p = 1.0f;
    request.sampling.min_p = 0.0f;
    return request;
  }
  // The id of a text that is one token of the vocabulary.
  int32_t single_token(std::string_view text) const {
    const std::vector<int32_t> ids = engine_->tokenize(text, false);
    EXPECT_EQ(ids.size(), 1u) << text;
    return ids.empty() ? 0 : ids[0];
  }
  Greedy golden_;
  std::unique_ptr<bonsai::Engine> engine_;
};

TEST_F(Speculative, GreedyReplyIsTheGoldenOneWithADraft) {
  // The golden continuation, with the prompt repeated so that lookups hit.
  const auto plain = run(golden_.prompt, 24, 0);
  EXPECT_EQ(plain.tokens, golden_.greedy);
  for (const int32_t ngram : {1, 2, 3}) {
    const auto drafted = run(golden_.prompt, 24, ngram);
    EXPECT_EQ(drafted.tokens, golden_.greedy) << "ngram " << ngram;
    EXPECT_EQ(drafted.stats.gen_tokens, 24);
  }
}

TEST_F(Speculative, ARepetitiveContextDraftsAndKeepsTheModelsTokens) {
  // A prompt that repeats itself, and a reply long enough to loop: the
  // draft proposes tokens, some are kept, some not; the reply never changes.
  std::vector<int32_t> prompt;
  for (int r = 0; r < 3; ++r)
    prompt.insert(prompt.end(), golden_.prompt.begin(), golden_.prompt.end());
  const auto plain = run(prompt, 64, 0);
  for (const int32_t ngram : {1, 2}) {
    const auto drafted = run(prompt, 64, ngram);
    EXPECT_EQ(drafted.tokens, plain.tokens) << "ngram " << ngram;
    EXPECT_GT(drafted.stats.drafted_tokens, 0) << "ngram " << ngram;
    EXPECT_LE(drafted.stats.accepted_tokens, drafted.stats.drafted_tokens);
    // Each verified step yields the kept drafts plus one token.
    EXPECT_LE(drafted.stats.gen_steps, 64);
  }
}

TEST_F(Speculative, TheSessionContinuesAfterADraftedReply) {
  // After a drafted reply the cache holds exactly the prompt and the reply:
  // generating on from it equals generating on from a plain reply.
  auto a = engine_->create_session();
  auto b = engine_->create_session();
  bonsai::GenerateRequest request = greedy_request(golden_.prompt, 20);
  const auto plain = a.generate(request);
  request.draft.ngram = 1;
  const auto drafted = b.generate(request);
  ASSERT_EQ(plain.tokens, drafted.tokens);
  EXPECT_EQ(a.position(), b.position());
  bonsai::GenerateRequest more = greedy_request({5, 7, 9}, 8);
  more.continue_session = true;
  EXPECT_EQ(a.generate(more).tokens, b.generate(more).tokens);
}

// A reply that ends on a verified row: the row after the last proposal
// (every proposal kept) or a refused one. Its last token is not in the cache
// and must stay pending, as after a plain step, so that the next turn
// starts from exactly the prompt and the reply.
TEST_F(Speculative, AReplyEndingOnAVerifiedRowKeepsItsLastToken) {
  bonsai::Engine draft_engine = bonsai::Engine::open(tiny_q1(), cpu_options(256));
  bonsai::Session draft = draft_engine.create_session();
  for (const int32_t n : {4, 7}) { // 1 + 3k: the last token comes from a bonus row
    auto a = engine_->create_session();
    auto b = engine_->create_session();
    bonsai::GenerateRequest request = greedy_request(golden_.prompt, n);
    const auto plain = a.generate(request);
    request.draft.model = &draft; // the model itself: every proposal kept
    request.draft.adaptive = false;
    request.draft.max = 2;
    request.draft.p_min = 0;
    const auto drafted = b.generate(request);
    ASSERT_EQ(plain.tokens, drafted.tokens);
    EXPECT_EQ(drafted.stats.accepted_tokens, n - 1 - (n - 1) / 3) << n;
    bonsai::GenerateRequest more = greedy_request({5, 7, 9}, 6);
    more.continue_session = true;
    EXPECT_EQ(a.generate(more).tokens, b.generate(more).tokens) << n;
    EXPECT_EQ(a.position(), b.position()) << n;
  }
}

TEST_F(Speculative, ADraftModelNeverChangesTheGreedyReply) {
  // Drafts that always agree (the model itself), and that mostly do not (a
  // model with other weights over the same vocabulary).
  for (const char *draft_file : {"tiny-q1.gguf", "tiny-q2.gguf"}) {
    bonsai::Engine draft_engine = bonsai::Engine::open(data_path(draft_file), cpu_options(256));
    bonsai::Session draft = draft_engine.create_session();
    auto session = engine_->create_session();
    bonsai::GenerateRequest request = greedy_request(golden_.prompt, 24);
    request.draft.model = &draft;
    request.draft.max = 4;
    request.draft.p_min = 0;
    const auto result = session.generate(request);
    EXPECT_EQ(result.tokens, golden_.greedy) << draft_file;
    EXPECT_GT(result.stats.drafted_tokens, 0) << draft_file;
    if (std::string(draft_file) == "tiny-q1.gguf") {
      EXPECT_EQ(result.stats.accepted_tokens, result.stats.drafted_tokens);
    }
  }
}

TEST_F(Speculative, BadDraftOptionsAreRefused) {
  auto session = engine_->create_session();
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden_.prompt;
  request.draft.ngram = 2;
  request.draft.min = 4;
  request.draft.max = 2;
  EXPECT_THROW(session.generate(request), bonsai::InvalidArgument);
  request.draft.min = 1;
  request.draft.model = &session; // a session cannot draft for itself
  EXPECT_THROW(session.generate(request), bonsai::InvalidArgument);
  EXPECT_EQ(session.position(), 0);
}

// Generation::next(row, proposed), what bonsai serve verifies drafts with:
// whatever is proposed, the tokens drawn follow the sampler's distribution.
// A row with three live tokens (logits 2, 1, 0; softmax 0.665, 0.245,
// 0.090) and the proposal always the middle one: 3,000 draws, chi-square
// with 2 degrees of freedom under 13.8 (p = 0.001).
TEST_F(Speculative, AGenerationVerifyingProposalsDrawsFromTheSamplersDistribution) {
  bonsai::GenerateRequest request = plain_sampling_request();
  request.sampling.seed = 7;
  bonsai::Generation generation(*engine_, request);
  std::vector<float> row(static_cast<size_t>(engine_->n_vocab()), -1e30f);
  const int32_t live[3] = {100, 200, 300};
  row[100] = 2.0f;
  row[200] = 1.0f;
  row[300] = 0.0f;
  const double z = std::exp(2.0) + std::exp(1.0) + 1.0;
  const double expected[3] = {std::exp(2.0) / z, std::exp(1.0) / z, 1.0 / z};
  constexpr int kDraws = 3000;
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < kDraws; ++i) {
    const int32_t token = generation.next(row, 200).token;
    const auto at = std::find(std::begin(live), std::end(live), token) - std::begin(live);
    ASSERT_LT(at, 3) << "token " << token << " has no probability";
    ++counts[at];
  }
  double chi2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double e = expected[k] * kDraws;
    chi2 += (counts[k] - e) * (counts[k] - e) / e;
  }
  EXPECT_LT(chi2, 13.8) << counts[0] << " " << counts[1] << " " << counts[2];
}

TEST_F(Speculative, AGenerationVerifiesOnlyWhereItCan) {
  bonsai::GenerateRequest request = greedy_request(golden_.prompt, 8);
  bonsai::Generation generation(*engine_, request);
  std::vector<float> row(static_cast<size_t>(engine_->n_vocab()), 0.0f);
  row[42] = 5.0f;
  // Greedy: the argmax, whatever was proposed.
  EXPECT_EQ(generation.next(row, 7).token, 42);
  EXPECT_THROW(generation.next(row, engine_->n_vocab()), bonsai::InvalidArgument);
  EXPECT_THROW(generation.next(row, -1), bonsai::InvalidArgument);
  // Adaptive (the default): a plain step is measured before any draft.
  EXPECT_EQ(generation.draft_length(16, 100), 0);
  request.draft.max = 16;
  request.draft.adaptive = false;
  bonsai::Generation asked(*engine_, request);
  // Seven tokens left after the one chosen: the step's own and 6 proposals.
  EXPECT_EQ(asked.next(row).token, 42);
  EXPECT_EQ(asked.draft_length(16, 100), 6);
  EXPECT_EQ(asked.draft_length(16, 3), 3);
  // A reply format verifies proposals too: "{" opens a JSON object, and
  // greedy keeps it where it is the best token the format allows, whatever
  // the row's best token is.
  request.format.kind = bonsai::ReplyFormat::Kind::json_object;
  bonsai::Generation formatted(*engine_, request);
  EXPECT_EQ(formatted.draft_length(16, 100), 7);
  const int32_t brace = single_token("{");
  row[static_cast<size_t>(brace)] = 4.0f;
  EXPECT_EQ(formatted.next(row, brace).token, brace);
  EXPECT_THROW(formatted.next(row, -1), bonsai::InvalidArgument);
}

// Under a reply format, Generation::next(row, proposed) draws as the
// format's plain step does, over the tokens the format allows: at the start
// of a JSON object "{" and "{\n" (logits 0 and ln 3: 1/4 and 3/4), not
// "[" (logit ln 6, the row's best: a JSON array). The proposal is always "{": 3,000
// draws, kept about a quarter of the time, chi-square with 1 degree of
// freedom under 10.8 (p = 0.001).
TEST_F(Speculative, AFormattedGenerationDrawsProposalsFromTheFormatsDistribution) {
  bonsai::GenerateRequest request = plain_sampling_request();
  request.format.kind = bonsai::ReplyFormat::Kind::json_object;
  const int32_t brace = single_token("{");
  const int32_t brace_line = single_token("{\n");
  const int32_t bracket = single_token("[");
  std::vector<float> row(static_cast<size_t>(engine_->n_vocab()), -1e30f);
  row[static_cast<size_t>(brace)] = 0.0f;
  row[static_cast<size_t>(brace_line)] = std::log(3.0f);
  row[static_cast<size_t>(bracket)] = std::log(6.0f);
  constexpr int kDraws = 3000;
  int kept = 0, other = 0;
  for (int i = 0; i < kDraws; ++i) {
    request.sampling.seed = static_cast<uint64_t>(1000 + i);
    bonsai::Generation generation(*engine_, request); // a fresh format each draw
    const int32_t token = generation.next(row, brace).token;
    ASSERT_TRUE(token == brace || token == brace_line) << "token " << token;
    ++(token == brace ? kept : other);
  }
  const double e_kept = kDraws / 4.0, e_other = kDraws * 3.0 / 4.0;
  const double chi2 =
      (kept - e_kept) * (kept - e_kept) / e_kept + (other - e_other) * (other - e_other) / e_other;
  EXPECT_LT(chi2, 10.8) << kept << " kept of " << kDraws;
}

// Greedy replies under a JSON format, with drafts that agree often (the
// model itself, whose unconstrained best token the format often allows) and
// prompt lookup: the reply is the plain formatted one.
TEST_F(Speculative, AFormattedGreedyReplyWithADraftIsThePlainOne) {
  bonsai::Engine draft_engine = bonsai::Engine::open(tiny_q1(), cpu_options(256));
  bonsai::Session draft = draft_engine.create_session();
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden_.prompt;
  request.n_predict = 40;
  request.sampling.temperature = 0;
  request.format.kind = bonsai::ReplyFormat::Kind::json_object;
  const auto plain = engine_->create_session().generate(request);
  ASSERT_EQ(plain.text.substr(0, 1), "{") << plain.text;
  request.draft.max = 4;
  request.draft.p_min = 0;
  request.draft.adaptive = false;
  request.draft.model = &draft;
  const auto with_model = engine_->create_session().generate(request);
  EXPECT_EQ(with_model.tokens, plain.tokens);
  EXPECT_GT(with_model.stats.drafted_tokens, 0);
  EXPECT_GT(with_model.stats.accepted_tokens, 0);
  request.draft.model = nullptr;
  request.draft.ngram = 1;
  const auto with_lookup = engine_->create_session().generate(request);
  EXPECT_EQ(with_lookup.tokens, plain.tokens);
  EXPECT_GT(with_lookup.stats.drafted_tokens, 0);
}

// Log probabilities of a drafted reply come from each token's own row of the
// verify step: the same as the plain reply's (the CPU plugin's rows do not
// depend on the tokens beside them), top alternatives included.
TEST_F(Speculative, LogprobsOfADraftedReplyAreThePlainOnes) {
  std::vector<int32_t> prompt;
  for (int r = 0; r < 3; ++r)
    prompt.insert(prompt.end(), golden_.prompt.begin(), golden_.prompt.end());
  bonsai::GenerateRequest request = greedy_request(prompt, 48);
  request.logprobs = true;
  request.top_logprobs = 3;
  const auto plain = engine_->create_session().generate(request);
  request.draft.ngram = 1;
  request.draft.adaptive = false;
  const auto drafted = engine_->create_session().generate(request);
  ASSERT_EQ(drafted.tokens, plain.tokens);
  EXPECT_GT(drafted.stats.accepted_tokens, 0);
  ASSERT_EQ(drafted.logprobs.size(), plain.tokens.size());
  ASSERT_EQ(drafted.top_logprobs.size(), plain.top_logprobs.size());
  for (size_t i = 0; i < plain.logprobs.size(); ++i) {
    EXPECT_NEAR(drafted.logprobs[i], plain.logprobs[i], 1e-5) << "token " << i;
    ASSERT_EQ(drafted.top_logprobs[i].size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(drafted.top_logprobs[i][k].token, plain.top_logprobs[i][k].token);
      EXPECT_NEAR(drafted.top_logprobs[i][k].logprob, plain.top_logprobs[i][k].logprob, 1e-5);
    }
  }
}

} // namespace

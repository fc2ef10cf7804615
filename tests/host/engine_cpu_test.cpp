// Engine/Session behaviour with the real CPU plugin of the build tree on the
// tiny golden model (reference kernels: exact f32, so greedy equals the
// float64 reference).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include "bonsai/engine.hpp"
#include "bonsai/log.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;
using ::testing::HasSubstr;

bonsai::GenerateRequest greedy_request(const Greedy &golden) {
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden.prompt;
  request.n_predict = static_cast<int32_t>(golden.greedy.size());
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace(); // no stop tokens
  return request;
}

class EngineCpu : public ::testing::Test {
protected:
  void SetUp() override {
    golden_ = load_greedy("tiny-q1.ref.greedy.json");
    ASSERT_EQ(golden_.prompt.size(), 8u);
    ASSERT_EQ(golden_.greedy.size(), 24u);
    engine_ = std::make_unique<bonsai::Engine>(bonsai::Engine::open(tiny_q1(), cpu_options()));
  }
  Greedy golden_;
  std::unique_ptr<bonsai::Engine> engine_;
};

TEST_F(EngineCpu, SelectsTheRequestedPluginAndDescribesTheModel) {
  EXPECT_EQ(engine_->backend().name, "cpu");
  EXPECT_TRUE(engine_->backend().device_ok);
  const auto &model = engine_->model();
  EXPECT_EQ(model.architecture, "qwen3");
  EXPECT_EQ(model.n_layer, 4);
  EXPECT_EQ(model.n_embd, 512);
  EXPECT_EQ(model.n_head, 4);
  EXPECT_EQ(model.n_head_kv, 2);
  EXPECT_EQ(model.head_dim, 128);
  EXPECT_EQ(model.n_ff, 1536);
  EXPECT_EQ(model.n_vocab, 2048);
  EXPECT_EQ(model.weight_type, "q1_0");
  EXPECT_FALSE(model.tied_lm_head);
  EXPECT_EQ(engine_->options().n_ctx, 64);
}

TEST_F(EngineCpu, GreedyGenerationMatchesGolden) {
  auto session = engine_->create_session();
  EXPECT_TRUE(session.plugin_runs_layers());
  std::string streamed;
  const auto result = session.generate(greedy_request(golden_), [&](std::string_view piece) {
    streamed += piece;
    return true;
  });
  EXPECT_EQ(result.tokens, golden_.greedy);
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::length);
  // Token 158 is a lone UTF-8 lead byte: streamed text replaces it.
  EXPECT_EQ(result.text, sanitize_utf8(engine_->detokenize(golden_.greedy)));
  EXPECT_EQ(streamed, result.text);
  EXPECT_EQ(result.stats.prompt_tokens, 8);
  EXPECT_EQ(result.stats.gen_tokens, 24);
  EXPECT_GT(result.stats.prompt_tps, 0.0);
  EXPECT_GT(result.stats.gen_tps, 0.0);
  // 8 prompt tokens + 23 fed back; the 24th is sampled but not evaluated.
  EXPECT_EQ(session.position(), 31);
  // The rate counts those 23 decode steps, not the 24 tokens: the first
  // token came from the prompt's logits (llama.cpp's definition).
  EXPECT_EQ(result.stats.gen_steps, 23);
  EXPECT_NEAR(result.stats.gen_tps * result.stats.gen_ms / 1000.0, 23.0, 1e-6);
}

TEST_F(EngineCpu, LogprobsAreTheReferenceDistributionsLogSoftmax) {
  // The float64 reference's logits of the golden prompt: the log probability
  // of the token generated after k prompt tokens is log_softmax(row k - 1).
  const std::vector<int32_t> tokens = load_prompt("tiny-q1.prompt.json");
  const std::vector<float> reference = load_f32("tiny-q1.ref.logits.f32");
  const size_t n_vocab = 2048;
  ASSERT_EQ(reference.size(), tokens.size() * n_vocab);
  for (const size_t k : {size_t{8}, size_t{21}, size_t{48}}) {
    auto session = engine_->create_session();
    bonsai::GenerateRequest request;
    request.prompt_tokens.assign(tokens.begin(), tokens.begin() + static_cast<ptrdiff_t>(k));
    request.n_predict = 1;
    request.sampling.temperature = 0.0f;
    request.stop_tokens.emplace();
    request.logprobs = true;
    const auto result = session.generate(request);
    ASSERT_EQ(result.tokens.size(), 1u);
    ASSERT_EQ(result.logprobs.size(), 1u);
    const float *row = reference.data() + (k - 1) * n_vocab;
    const size_t best = static_cast<size_t>(std::max_element(row, row + n_vocab) - row);
    EXPECT_EQ(result.tokens[0], static_cast<int32_t>(best)) << "after " << k << " tokens";
    double sum = 0.0;
    for (size_t v = 0; v < n_vocab; ++v)
      sum += std::exp(static_cast<double>(row[v]) - row[best]);
    const double expected = -std::log(sum); // log_softmax at the maximum
    EXPECT_NEAR(result.logprobs[0], expected, 1e-3) << "after " << k << " tokens";
  }
}

// min_tokens masks the stop tokens until the reply holds that many: with
// the greedy first token as the only stop token, a plain request ends at
// once, and one with min_tokens takes the reference's second best instead.
TEST_F(EngineCpu, MinTokensHoldsTheStopTokensBack) {
  const std::vector<int32_t> tokens = load_prompt("tiny-q1.prompt.json");
  const std::vector<float> reference = load_f32("tiny-q1.ref.logits.f32");
  const size_t n_vocab = 2048;
  const float *row = reference.data() + (golden_.prompt.size() - 1) * n_vocab;
  ASSERT_TRUE(std::equal(golden_.prompt.begin(), golden_.prompt.end(), tokens.begin()));
  std::vector<size_t> order(n_vocab);
  std::iota(order.begin(), order.end(), size_t{0});
  std::partial_sort(order.begin(), order.begin() + 2, order.end(),
                    [&](size_t a, size_t b) { return row[a] > row[b]; });
  ASSERT_EQ(static_cast<int32_t>(order[0]), golden_.greedy[0]);
  auto request = greedy_request(golden_);
  request.n_predict = 5;
  request.stop_tokens = std::vector<int32_t>{golden_.greedy[0]};
  auto session = engine_->create_session();
  EXPECT_TRUE(session.generate(request).tokens.empty());
  request.min_tokens = 3;
  auto held = engine_->create_session();
  const auto result = held.generate(request);
  ASSERT_GE(result.tokens.size(), 3u);
  EXPECT_EQ(result.tokens[0], static_cast<int32_t>(order[1]));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NE(result.tokens[i], golden_.greedy[0]) << i;
  request.min_tokens = -1;
  EXPECT_THROW(held.generate(request), bonsai::InvalidArgument);
  request.min_tokens = 2;
  request.draft.ngram = 2;
  EXPECT_THROW(held.generate(request), bonsai::InvalidArgument);
}

TEST_F(EngineCpu, GreedyWithLogprobsKeepsTheGoldenTokens) {
  // Logprobs take the logits path instead of the backend's argmax: the
  // tokens must not change.
  auto session = engine_->create_session();
  bonsai::GenerateRequest request = greedy_request(golden_);
  request.logprobs = true;
  request.top_logprobs = 3;
  const auto result = session.generate(request);
  EXPECT_EQ(result.tokens, golden_.greedy);
  ASSERT_EQ(result.logprobs.size(), golden_.greedy.size());
  ASSERT_EQ(result.top_logprobs.size(), golden_.greedy.size());
  for (size_t i = 0; i < result.logprobs.size(); ++i) {
    const float lp = result.logprobs[i];
    EXPECT_LE(lp, 0.0f);
    EXPECT_GE(lp, -std::log(2048.0f) - 1e-4f); // the argmax is at least uniform
    // Greedy: the chosen token is the best alternative, the others follow.
    const auto &top = result.top_logprobs[i];
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].token, result.tokens[i]);
    EXPECT_FLOAT_EQ(top[0].logprob, lp);
    EXPECT_GE(top[1].logprob, top[2].logprob);
  }
  EXPECT_TRUE(session.generate(greedy_request(golden_)).logprobs.empty());
}

TEST(HostLog, TheCallbackReceivesHostAndPluginLinesAndCanBeRemoved) {
  struct Line {
    bonsai::LogLevel level;
    std::string text;
  };
  std::mutex mutex;
  std::vector<Line> lines;
  bonsai::set_log_callback([&](bonsai::LogLevel level, std::string_view text) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back({level, std::string(text)});
  });
  bonsai::log_message(bonsai::LogLevel::warn, "a host line");
  bonsai::log_message(bonsai::LogLevel::debug, "below the level: dropped");
  // The CPU plugin warns when asked for more threads than it may use.
  bonsai::EngineOptions options = cpu_options();
  options.n_threads = 1000;
  auto engine = bonsai::Engine::open(tiny_q1(), options);
  auto session = engine.create_session();
  bonsai::set_log_callback(nullptr);
  bonsai::log_message(bonsai::LogLevel::warn, "after removal: to stderr");
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].level, bonsai::LogLevel::warn);
  EXPECT_EQ(lines[0].text, "a host line");
  bool plugin_line = false;
  for (const Line &line : lines) {
    EXPECT_EQ(line.text.find("dropped"), std::string::npos);
    EXPECT_EQ(line.text.find("after removal"), std::string::npos);
    plugin_line |=
        line.text.rfind("[cpu] ", 0) == 0 && line.text.find("n_threads 1000") != std::string::npos;
  }
  EXPECT_TRUE(plugin_line) << "no [cpu] thread-count warning through the callback";
}

TEST(HostLog, ACallbackMayRemoveItselfWithoutDeadlock) {
  int calls = 0;
  bonsai::set_log_callback([&calls](bonsai::LogLevel, std::string_view) {
    ++calls;
    bonsai::set_log_callback(nullptr); // the sink's lock is not held here
  });
  bonsai::log_message(bonsai::LogLevel::warn, "first: to the callback");
  bonsai::log_message(bonsai::LogLevel::warn, "second: to stderr");
  EXPECT_EQ(calls, 1);
}

TEST_F(EngineCpu, SamplerPathWithTopKOneEqualsGreedy) {
  // temperature 1 with top-k 1 goes through the logits + core sampler path,
  // which must pick the argmax every time.
  auto session = engine_->create_session();
  auto request = greedy_request(golden_);
  request.sampling.temperature = 1.0f;
  request.sampling.top_k = 1;
  request.sampling.seed = 7;
  EXPECT_EQ(session.generate(request).tokens, golden_.greedy);
}

TEST_F(EngineCpu, SeededSamplingIsReproducible) {
  auto session = engine_->create_session();
  auto request = greedy_request(golden_);
  request.sampling.temperature = 1.5f;
  request.sampling.top_k = 0;
  request.sampling.top_p = 1.0f;
  request.sampling.min_p = 0.0f;
  request.sampling.seed = 1234;
  const auto first = session.generate(request);
  const auto second = session.generate(request);
  EXPECT_EQ(first.tokens, second.tokens);
  EXPECT_EQ(first.tokens.size(), 24u);
  // High temperature over random weights: not the greedy path.
  EXPECT_NE(first.tokens, golden_.greedy);
}

TEST_F(EngineCpu, EvalLogitsMatchReference) {
  const auto prompt = load_prompt("tiny-q1.prompt.json");
  const auto reference = load_f32("tiny-q1.ref.logits.f32");
  auto session = engine_->create_session();
  const auto logits = session.eval(prompt, {.all_logits = true});
  ASSERT_EQ(logits.n_outputs, 48);
  for (int32_t pos = 0; pos < 48; ++pos)
    EXPECT_GE(cosine(logits.row(pos).data(), reference.data() + pos * 2048, 2048), 0.99999)
        << "position " << pos;
}

TEST_F(EngineCpu, PromptSplitIntoSmallBatchesGivesTheSameGreedyTokens) {
  auto options = cpu_options();
  options.n_batch = 3; // 8 prompt tokens as steps of 3, 3, 2
  const auto engine = bonsai::Engine::open(tiny_q1(), options);
  auto session = engine.create_session();
  EXPECT_EQ(session.generate(greedy_request(golden_)).tokens, golden_.greedy);
}

TEST_F(EngineCpu, TwoSessionsInTwoThreadsMatchOneSession) {
  std::vector<int32_t> results[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i)
    threads[i] = std::thread([&, i] {
      auto session = engine_->create_session();
      results[i] = session.generate(greedy_request(golden_)).tokens;
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(results[0], golden_.greedy);
  EXPECT_EQ(results[1], golden_.greedy);
}

TEST_F(EngineCpu, CancelFromAnotherThreadStopsGeneration) {
  auto session = engine_->create_session();
  auto request = greedy_request(golden_);
  request.n_predict = -1; // would run until the context is full

  std::mutex mutex;
  std::condition_variable changed;
  bool first_piece = false;
  bool cancel_sent = false;
  std::thread canceller([&] {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return first_piece; });
    session.cancel();
    cancel_sent = true;
    changed.notify_all();
  });
  int pieces = 0;
  const auto result = session.generate(request, [&](std::string_view) {
    ++pieces;
    std::unique_lock lock(mutex);
    first_piece = true;
    changed.notify_all();
    // Hold this step until the other thread has cancelled, so the flag is
    // certainly seen at the next check.
    changed.wait(lock, [&] { return cancel_sent; });
    return true;
  });
  canceller.join();
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::cancelled);
  EXPECT_EQ(pieces, 1);
  ASSERT_EQ(result.tokens.size(), 1u);
  EXPECT_EQ(result.tokens[0], golden_.greedy[0]);

  // The request was consumed: the next generation runs normally.
  session.reset();
  EXPECT_EQ(session.generate(greedy_request(golden_)).tokens, golden_.greedy);
}

TEST_F(EngineCpu, CallbackReturningFalseStops) {
  auto session = engine_->create_session();
  int pieces = 0;
  const auto result =
      session.generate(greedy_request(golden_), [&](std::string_view) { return ++pieces < 3; });
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::cancelled);
  EXPECT_EQ(pieces, 3);
}

TEST_F(EngineCpu, CancelBeforeEvalStopsAtTheFirstLayerAndIsConsumed) {
  auto session = engine_->create_session();
  session.cancel();
  EXPECT_THROW(session.eval(golden_.prompt), bonsai::CancelledError);
  EXPECT_EQ(session.position(), 0);
  EXPECT_EQ(session.eval_argmax(golden_.prompt), golden_.greedy[0]);
  EXPECT_EQ(session.position(), 8);
}

TEST_F(EngineCpu, RewindingAfterACancelledStepWorks) {
  // The cancelled step stays open in the plugin; kv_truncate must drop it.
  auto session = engine_->create_session();
  const std::vector<int32_t> head(golden_.prompt.begin(), golden_.prompt.begin() + 4);
  const std::vector<int32_t> tail(golden_.prompt.begin() + 4, golden_.prompt.end());
  session.eval(golden_.prompt);
  session.cancel();
  EXPECT_THROW(session.eval(head), bonsai::CancelledError);
  EXPECT_EQ(session.position(), 8);
  session.truncate(4);
  EXPECT_EQ(session.eval_argmax(tail), golden_.greedy[0]);
}

TEST_F(EngineCpu, PromptLongerThanTheContextIsRejectedBeforeAnyWork) {
  const auto engine = bonsai::Engine::open(tiny_q1(), cpu_options(16));
  auto session = engine.create_session();
  bonsai::GenerateRequest request;
  request.prompt_tokens = load_prompt("tiny-q1.prompt.json"); // 48 > 16
  try {
    session.generate(request);
    FAIL() << "expected ContextFullError";
  } catch (const bonsai::ContextFullError &error) {
    EXPECT_THAT(std::string(error.what()), HasSubstr("48"));
    EXPECT_THAT(std::string(error.what()), HasSubstr("16"));
  }
  EXPECT_EQ(session.position(), 0);
  EXPECT_THROW(session.eval(request.prompt_tokens), bonsai::ContextFullError);
  EXPECT_EQ(session.position(), 0);
}

TEST_F(EngineCpu, NPredictPastTheContextIsRejectedBeforeAnyWork) {
  const auto engine = bonsai::Engine::open(tiny_q1(), cpu_options(16));
  auto session = engine.create_session();
  auto request = greedy_request(golden_); // 8 + 24 > 16
  EXPECT_THROW(session.generate(request), bonsai::ContextFullError);
  EXPECT_EQ(session.position(), 0);
  // Without a limit it runs until the window is full.
  request.n_predict = -1;
  const auto result = session.generate(request);
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::context_full);
  EXPECT_EQ(session.position(), 16);
  // 16 - 8 = 8 tokens fed back, plus the one sampled at the end.
  ASSERT_EQ(result.tokens.size(), 9u);
  EXPECT_TRUE(std::equal(result.tokens.begin(), result.tokens.end(), golden_.greedy.begin()));
}

TEST_F(EngineCpu, TokenOutsideTheVocabularyIsRejected) {
  auto session = engine_->create_session();
  const std::vector<int32_t> bad = {1, 2048};
  EXPECT_THROW(session.eval(bad), bonsai::InvalidArgument);
  auto request = greedy_request(golden_);
  request.prompt_tokens.push_back(-1);
  EXPECT_THROW(session.generate(request), bonsai::InvalidArgument);
  EXPECT_THROW(session.eval(std::vector<int32_t>{}), bonsai::InvalidArgument);
  EXPECT_EQ(session.position(), 0);
  EXPECT_THROW(engine_->detokenize(bad), bonsai::InvalidArgument);
  EXPECT_THROW(engine_->tokenize("\xff\xfe"), bonsai::InvalidArgument);
}

TEST_F(EngineCpu, StopTokenEndsGenerationWithoutBeingOutput) {
  auto session = engine_->create_session();
  auto request = greedy_request(golden_);
  request.stop_tokens = std::vector<int32_t>{golden_.greedy[5]};
  const auto result = session.generate(request);
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::stop_token);
  const auto first = std::find(golden_.greedy.begin(), golden_.greedy.end(), golden_.greedy[5]);
  EXPECT_EQ(result.tokens, std::vector<int32_t>(golden_.greedy.begin(), first));
}

TEST_F(EngineCpu, StopStringCutsTheTextAndIsNeverStreamed) {
  const std::string full = sanitize_utf8(engine_->detokenize(golden_.greedy));
  // A stop string made of the text of tokens 10..11.
  const std::string stop = sanitize_utf8(engine_->detokenize(
      std::vector<int32_t>(golden_.greedy.begin() + 10, golden_.greedy.begin() + 12)));
  ASSERT_FALSE(stop.empty());
  const std::string expected = full.substr(0, full.find(stop));

  auto session = engine_->create_session();
  auto request = greedy_request(golden_);
  request.stop_strings = {stop};
  std::string streamed;
  const auto result = session.generate(request, [&](std::string_view piece) {
    streamed += piece;
    return true;
  });
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::stop_string);
  EXPECT_EQ(result.text, expected);
  EXPECT_EQ(streamed, expected);
}

TEST_F(EngineCpu, SamePromptAgainReusesTheCachedPrefix) {
  auto session = engine_->create_session();
  const auto first = session.generate(greedy_request(golden_));
  const auto again = session.generate(greedy_request(golden_));
  EXPECT_EQ(again.tokens, golden_.greedy);
  EXPECT_EQ(again.stats.reused_tokens, 7); // the last prompt token is re-run for its logits
  EXPECT_EQ(again.stats.prompt_tokens, 1);
  EXPECT_EQ(first.tokens, again.tokens);
}

TEST_F(EngineCpu, ContinueSessionPicksUpWhereGenerationStopped) {
  auto session = engine_->create_session();
  auto request = greedy_request(golden_);
  request.n_predict = 12;
  const auto first = session.generate(request);
  bonsai::GenerateRequest more;
  more.continue_session = true;
  more.n_predict = 12;
  more.sampling.temperature = 0.0f;
  more.stop_tokens.emplace(); // no stop tokens
  const auto second = session.generate(more);
  std::vector<int32_t> both = first.tokens;
  both.insert(both.end(), second.tokens.begin(), second.tokens.end());
  EXPECT_EQ(both, golden_.greedy);
}

TEST_F(EngineCpu, TruncateRewindsTheCache) {
  auto session = engine_->create_session();
  const auto full = session.eval(golden_.prompt);
  session.truncate(3);
  EXPECT_EQ(session.position(), 3);
  EXPECT_EQ(session.tokens(),
            std::vector<int32_t>(golden_.prompt.begin(), golden_.prompt.begin() + 3));
  const auto again =
      session.eval(std::vector<int32_t>(golden_.prompt.begin() + 3, golden_.prompt.end()));
  EXPECT_GE(cosine(full.logits.data(), again.logits.data(), 2048), 0.99999);
  EXPECT_THROW(session.truncate(9), bonsai::InvalidArgument);
  session.reset();
  EXPECT_EQ(session.position(), 0);
  EXPECT_EQ(session.decode_step(golden_.prompt[0]).size(), 2048u);
}

TEST_F(EngineCpu, SessionOutlivesItsEngine) {
  std::optional<bonsai::Session> session;
  {
    const auto engine = bonsai::Engine::open(tiny_q1(), cpu_options());
    session.emplace(engine.create_session());
  }
  EXPECT_EQ(session->generate(greedy_request(golden_)).tokens, golden_.greedy);
}

TEST_F(EngineCpu, UploadProgressRisesToOne) {
  std::vector<double> seen;
  bonsai::SessionOptions options;
  options.on_progress = [&](double fraction) { seen.push_back(fraction); };
  (void)engine_->create_session(options);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.front(), 0.0);
  EXPECT_EQ(seen.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST_F(EngineCpu, ChatPromptUsesTheTemplate) {
  auto session = engine_->create_session();
  bonsai::GenerateRequest request;
  request.prompt = "hello";
  request.chat = true;
  request.n_predict = 2;
  const std::vector<bonsai::ChatMessage> messages = {{"user", "hello"}};
  const auto expected_prompt = engine_->tokenize(engine_->apply_chat_template(messages));
  const auto result = session.generate(request);
  EXPECT_EQ(result.stats.prompt_tokens, static_cast<int32_t>(expected_prompt.size()));
  ASSERT_GE(session.tokens().size(), expected_prompt.size());
  EXPECT_TRUE(std::equal(expected_prompt.begin(), expected_prompt.end(), session.tokens().begin()));
  EXPECT_THAT(engine_->apply_chat_template(messages),
              HasSubstr("<|im_start|>user\nhello<|im_end|>"));
}

TEST(EngineOptions, AutoFindsABuiltPluginWithoutConfiguration) {
  // No BONSAI_PLUGIN_PATH: the build tree's plugin folder is searched; cuda
  // wins only where it finds a device, else cpu.
  ScopedEnv env("BONSAI_PLUGIN_PATH", "");
  bonsai::EngineOptions options;
  options.n_ctx = 16;
  const auto engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_THAT(engine.backend().name, ::testing::AnyOf("cpu", "cuda"));
  EXPECT_TRUE(engine.backend().device_ok);
}

TEST(EngineOptions, ContextIsClampedToTheModelAndValidated) {
  auto options = cpu_options(0);
  EXPECT_EQ(bonsai::Engine::open(tiny_q1(), options).options().n_ctx, 4096);
  options.n_ctx = 1 << 20;
  EXPECT_EQ(bonsai::Engine::open(tiny_q1(), options).options().n_ctx, 4096);
  options.n_ctx = 8;
  options.n_batch = 512;
  EXPECT_EQ(bonsai::Engine::open(tiny_q1(), options).options().n_batch, 8);
  options.n_batch = 0;
  EXPECT_THROW(bonsai::Engine::open(tiny_q1(), options), bonsai::InvalidArgument);
  options.n_batch = 4;
  options.n_ctx = -1;
  EXPECT_THROW(bonsai::Engine::open(tiny_q1(), options), bonsai::InvalidArgument);
}

TEST(EngineOptions, UnusableModelFilesGiveModelErrorsNamingTheFile) {
  const std::string missing = data_path("no-such-model.gguf");
  try {
    bonsai::Engine::open(missing, cpu_options());
    FAIL();
  } catch (const bonsai::ModelError &error) {
    EXPECT_THAT(std::string(error.what()), HasSubstr(missing));
  }
  const std::string not_gguf = data_path("tiny-q1.prompt.json");
  try {
    bonsai::Engine::open(not_gguf, cpu_options());
    FAIL();
  } catch (const bonsai::ModelError &error) {
    EXPECT_THAT(std::string(error.what()), HasSubstr(not_gguf));
  }
  // A tokenizer-only file has no model tensors.
  const std::string vocab_only = data_path("qwen3-vocab.gguf");
  EXPECT_THROW(bonsai::Engine::open(vocab_only, cpu_options()), bonsai::ModelError);
}

} // namespace

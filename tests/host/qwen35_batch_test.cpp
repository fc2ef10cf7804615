// qwen35 sequences in one Batch on the CPU plugin (ABI 1.2 layer kinds): they
// share one context and step together, each slot with its own recurrent
// state, and cutting one back or copying a prefix of one into another goes
// through the slot runner's checkpoints. Expected values are those of one
// uncut, unshared run of each sequence, on the exact kernels, where the same
// rows run in one step: their logits must agree to cosine 0.999999 (rows may
// be grouped otherwise in a batch's GEMM and the tokens run again in other
// step sizes) and their greedy choice must be the same.
#include <gtest/gtest.h>

#include "bonsai/batch.hpp"
#include "bonsai/engine.hpp"
#include "golden.hpp"
#include "host_test_support.hpp"

namespace {

constexpr int kVocab = 2048;

class Qwen35Batch : public ::testing::Test {
protected:
  void SetUp() override {
    golden_ = bonsai::test::load_golden_case(BONSAI_TEST_DATA_DIR, "tiny-q35-q1", kVocab);
    bonsai::EngineOptions options = host_test::cpu_options(96);
    options.n_batch = 32;
    engine_ = std::make_unique<bonsai::Engine>(bonsai::Engine::open(golden_.gguf_path, options));
  }

  std::vector<int32_t> prompt(size_t from, size_t to) const {
    return {golden_.prompt.begin() + static_cast<std::ptrdiff_t>(from),
            golden_.prompt.begin() + static_cast<std::ptrdiff_t>(to)};
  }

  // The logits after `tokens`, from a session of their own.
  std::vector<float> alone(const std::vector<int32_t> &tokens) const {
    auto session = engine_->create_session();
    return session.eval(tokens).logits;
  }

  static void expect_close(std::span<const float> got, const std::vector<float> &want,
                           const char *what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    EXPECT_GE(bonsai::test::cosine(got.data(), want.data(), got.size()), 0.999999) << what;
    EXPECT_EQ(bonsai::test::argmax(got.data(), got.size()),
              bonsai::test::argmax(want.data(), want.size()))
        << what;
  }

  // Steps `tokens` on `sequence` in chunks of at most 16 (two checkpoints
  // per 32 tokens); returns the last logits.
  std::vector<float> feed(bonsai::Batch &batch, int32_t sequence,
                          const std::vector<int32_t> &tokens) const {
    bonsai::BatchLogits out;
    for (size_t i = 0; i < tokens.size(); i += 16) {
      const std::vector<int32_t> chunk(
          tokens.begin() + static_cast<std::ptrdiff_t>(i),
          tokens.begin() + static_cast<std::ptrdiff_t>(std::min(tokens.size(), i + 16)));
      const bonsai::SequenceInput input{sequence, chunk};
      out = batch.step(std::span(&input, 1));
    }
    return out.values;
  }

  bonsai::test::GoldenCase golden_;
  std::unique_ptr<bonsai::Engine> engine_;
};

TEST_F(Qwen35Batch, SequencesStepTogetherWithTheirOwnState) {
  bonsai::Batch batch = engine_->create_batch({.max_sequences = 3, .on_progress = {}});
  EXPECT_TRUE(batch.steps_together());
  const int32_t a = batch.add_sequence(), b = batch.add_sequence(), c = batch.add_sequence();
  const std::vector<int32_t> pa = prompt(0, 12), pb = prompt(12, 24), pc = prompt(30, 40);
  const bonsai::SequenceInput prompts[] = {{a, pa}, {b, pb}};
  bonsai::BatchLogits out = batch.step(prompts);
  expect_close(out.row(0), alone(pa), "a after its prompt");
  expect_close(out.row(1), alone(pb), "b after its prompt");

  // One decode token each for a and b beside c's whole prompt.
  const std::vector<int32_t> ta{pb[0]}, tb{pa[0]};
  const bonsai::SequenceInput mixed[] = {{a, ta}, {c, pc}, {b, tb}};
  out = batch.step(mixed);
  std::vector<int32_t> wa = pa, wb = pb;
  wa.push_back(ta[0]);
  wb.push_back(tb[0]);
  expect_close(out.row(0), alone(wa), "a after a decode step");
  expect_close(out.row(1), alone(pc), "c after its prompt, beside a and b");
  expect_close(out.row(2), alone(wb), "b after a decode step");
}

TEST_F(Qwen35Batch, TruncateAndCopyPrefixRestoreTheRecurrentState) {
  bonsai::Batch batch = engine_->create_batch({.max_sequences = 2, .on_progress = {}});
  const int32_t a = batch.add_sequence(), b = batch.add_sequence();
  feed(batch, a, prompt(0, 40));
  // Back to 25 (a checkpoint lies at 32, another at 16): then on with other tokens.
  batch.truncate(a, 25);
  EXPECT_EQ(batch.position(a), 25);
  const std::vector<int32_t> other = prompt(40, 48);
  std::vector<int32_t> want = prompt(0, 25);
  want.insert(want.end(), other.begin(), other.end());
  expect_close(feed(batch, a, other), alone(want), "a cut back to 25, then 8 other tokens");

  // b takes a's first 30 tokens (a holds 33) and goes on from there.
  batch.copy_prefix(a, b, 30);
  EXPECT_EQ(batch.position(b), 30);
  std::vector<int32_t> want_b(want.begin(), want.begin() + 30);
  const std::vector<int32_t> more = prompt(2, 6);
  want_b.insert(want_b.end(), more.begin(), more.end());
  expect_close(feed(batch, b, more), alone(want_b), "b from a's first 30 tokens");

  // Removing a sequence and reusing its slot starts from the zero state.
  batch.remove_sequence(a);
  const int32_t d = batch.add_sequence();
  expect_close(feed(batch, d, prompt(5, 15)), alone(prompt(5, 15)), "a reused slot");
}

} // namespace

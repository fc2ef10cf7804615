// bonsai::Batch with the real CPU plugin (reference kernels) on the tiny
// golden model: sequences stepped together, joining at different times and
// sharing a copied prefix, must each decode the float64 reference's greedy
// continuation; misuse is refused before anything changes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "bonsai/batch.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;
using ::testing::HasSubstr;

bonsai::EngineOptions batch_engine_options(const std::string &plugin) {
  bonsai::EngineOptions options;
  options.backend = plugin;
  options.n_ctx = 64;
  options.n_batch = 16;
  options.n_threads = 2;
  options.plugin_options = "kernels=reference";
  return options;
}

bonsai::Batch batch_of(const bonsai::Engine &engine, int32_t max_sequences) {
  bonsai::BatchOptions options;
  options.max_sequences = max_sequences;
  return engine.create_batch(options);
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Sequences A (from the start), B (joins three steps later) and C (a copy of
// A's prompt, made once A has read it) decode greedily in shared steps; each
// must produce the golden greedy continuation. A fourth, D, with another
// prompt runs beside them so every step mixes unrelated sequences.
void expect_golden_greedy_in_batch(bonsai::Batch &batch, const Greedy &golden) {
  const int32_t a = batch.add_sequence();
  const int32_t d = batch.add_sequence();
  const std::vector<int32_t> other = {5, 17, 99, 3};
  struct Stream {
    int32_t id = -1;
    std::vector<int32_t> pending; // tokens to feed next step
    std::vector<int32_t> generated;
  };
  std::vector<Stream> streams = {{a, golden.prompt, {}}, {d, other, {}}};
  const size_t n_predict = golden.greedy.size();
  for (int step = 0; step < 40; ++step) {
    if (step == 3) {
      const int32_t b = batch.add_sequence();
      streams.push_back({b, golden.prompt, {}});
    }
    if (step == 1) {
      // A has read its prompt: C starts from a copy of it and continues with
      // A's first generated token.
      const int32_t c = batch.add_sequence();
      batch.copy_prefix(a, c, static_cast<int32_t>(golden.prompt.size()));
      ASSERT_EQ(batch.position(c), static_cast<int32_t>(golden.prompt.size()));
      streams.push_back({c, streams[0].pending, streams[0].generated});
    }
    std::vector<bonsai::SequenceInput> inputs;
    for (const Stream &s : streams)
      if (!s.pending.empty() && s.generated.size() < n_predict)
        inputs.push_back({s.id, s.pending, true});
    if (inputs.empty())
      break;
    const bonsai::BatchLogits out = batch.step(inputs);
    ASSERT_EQ(out.n_rows, static_cast<int32_t>(inputs.size()));
    size_t row = 0;
    for (Stream &s : streams) {
      if (s.pending.empty() || s.generated.size() >= n_predict)
        continue;
      const int32_t next = argmax(out.row(static_cast<int32_t>(row++)));
      s.generated.push_back(next);
      s.pending = {next};
    }
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].id == d)
      continue;
    EXPECT_EQ(streams[i].generated, golden.greedy)
        << "stream " << i << " (sequence " << streams[i].id << ")";
    EXPECT_EQ(batch.position(streams[i].id),
              static_cast<int32_t>(golden.prompt.size() + n_predict - 1));
  }
}

TEST(BatchCpu, SequencesSteppedTogetherDecodeTheGoldenGreedyContinuation) {
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), batch_engine_options(cpu_plugin()));
  bonsai::Batch batch = batch_of(engine, 4);
  EXPECT_TRUE(batch.steps_together());
  expect_golden_greedy_in_batch(batch, golden);
}

// A plugin without the sequences extension (the example plugin built against
// ABI 1.0, which also leaves the layers to the host): the batch steps each
// sequence with its own session, and the results are the same.
TEST(BatchAbi10Plugin, SequencesSteppedOneByOneDecodeTheGoldenGreedyContinuation) {
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  bonsai::EngineOptions engine_options = batch_engine_options(BONSAI_ABI10_PLUGIN);
  engine_options.plugin_options.clear();
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), engine_options);
  bonsai::Batch batch = batch_of(engine, 4);
  EXPECT_FALSE(batch.steps_together());
  expect_golden_greedy_in_batch(batch, golden);
}

// SequenceInput::all_logits (what verifying drafted tokens needs): the
// prompt and the first 7 golden tokens in one input give a row per token,
// and from the prompt's last token on each row's argmax is the next golden
// token; an input beside it that asks for its last row only gets one row,
// in input order.
void expect_a_row_per_token(const bonsai::Engine &engine) {
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  bonsai::Batch batch = batch_of(engine, 2);
  const int32_t a = batch.add_sequence();
  const int32_t b = batch.add_sequence();
  std::vector<int32_t> tokens = golden.prompt;
  tokens.insert(tokens.end(), golden.greedy.begin(), golden.greedy.begin() + 7);
  ASSERT_LE(tokens.size() + 1, static_cast<size_t>(batch.n_batch()));
  const std::vector<int32_t> other = {golden.prompt.back()};
  bonsai::SequenceInput inputs[] = {{a, tokens, true, true}, {b, other, true, false}};
  const bonsai::BatchLogits out = batch.step(inputs);
  ASSERT_EQ(out.n_rows, static_cast<int32_t>(tokens.size()) + 1);
  const auto first = static_cast<int32_t>(golden.prompt.size()) - 1;
  for (int32_t i = 0; i < 8; ++i) // the last row predicts the 8th
    EXPECT_EQ(argmax(out.row(first + i)), golden.greedy[static_cast<size_t>(i)]) << "row " << i;
  EXPECT_EQ(batch.position(a), static_cast<int32_t>(tokens.size()));
  // b's one row: the logits after the single token, as a batch of one gives.
  bonsai::Batch alone = batch_of(engine, 1);
  const int32_t c = alone.add_sequence();
  bonsai::SequenceInput single[] = {{c, other, true, false}};
  EXPECT_EQ(argmax(out.row(out.n_rows - 1)), argmax(alone.step(single).row(0)));
}

TEST(BatchCpu, AllLogitsGivesARowPerTokenInInputOrder) {
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), batch_engine_options(cpu_plugin()));
  expect_a_row_per_token(engine);
}

TEST(BatchAbi10Plugin, AllLogitsGivesARowPerTokenInInputOrder) {
  bonsai::EngineOptions engine_options = batch_engine_options(BONSAI_ABI10_PLUGIN);
  engine_options.plugin_options.clear();
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), engine_options);
  expect_a_row_per_token(engine);
}

TEST(BatchCpu, RemovedSequenceIdIsReusedEmptyAndTruncateRewinds) {
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), batch_engine_options(cpu_plugin()));
  bonsai::Batch batch = batch_of(engine, 2);
  const int32_t a = batch.add_sequence();
  const int32_t b = batch.add_sequence();
  EXPECT_THAT([&] { batch.add_sequence(); },
              ::testing::ThrowsMessage<bonsai::InvalidArgument>(HasSubstr("all 2 sequences")));
  bonsai::SequenceInput first[] = {{a, golden.prompt, true}, {b, {golden.prompt.data(), 3}, false}};
  const bonsai::BatchLogits out = batch.step(first);
  ASSERT_EQ(out.n_rows, 1);
  EXPECT_EQ(argmax(out.row(0)), golden.greedy[0]);

  batch.remove_sequence(a);
  const int32_t again = batch.add_sequence();
  EXPECT_EQ(again, a);
  EXPECT_EQ(batch.position(again), 0);
  // b holds the prompt's first 3 tokens; after truncating to 2 and feeding
  // the rest, its next token is the golden one.
  batch.truncate(b, 2);
  EXPECT_EQ(batch.tokens(b),
            std::vector<int32_t>(golden.prompt.begin(), golden.prompt.begin() + 2));
  const std::vector<int32_t> rest(golden.prompt.begin() + 2, golden.prompt.end());
  bonsai::SequenceInput second[] = {{b, rest, true}, {again, golden.prompt, true}};
  const bonsai::BatchLogits out2 = batch.step(second);
  EXPECT_EQ(argmax(out2.row(0)), golden.greedy[0]);
  EXPECT_EQ(argmax(out2.row(1)), golden.greedy[0]);
}

TEST(BatchCpu, MisuseIsRefusedBeforeAnySequenceChanges) {
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), batch_engine_options(cpu_plugin()));
  bonsai::Batch batch = batch_of(engine, 3);
  const int32_t a = batch.add_sequence();
  const int32_t b = batch.add_sequence();
  const std::vector<int32_t> two = {1, 2};
  const std::vector<int32_t> empty;
  const std::vector<int32_t> too_many(17, 1);
  const std::vector<int32_t> bad_id = {1, engine.n_vocab()};
  const auto refuses = [&](std::vector<bonsai::SequenceInput> inputs, const std::string &text) {
    EXPECT_THAT([&] { batch.step(inputs); },
                ::testing::ThrowsMessage<bonsai::InvalidArgument>(HasSubstr(text)));
    EXPECT_EQ(batch.position(a), 0);
    EXPECT_EQ(batch.position(b), 0);
  };
  refuses({}, "no sequences");
  refuses({{a, two}, {a, two}}, "appears twice");
  refuses({{a, two}, {2, two}}, "sequence 2 is not open");
  refuses({{a, two}, {b, empty}}, "has no tokens");
  refuses({{a, too_many}}, "exceed n_batch (16)");
  refuses({{a, two}, {b, bad_id}}, "outside the vocabulary");

  EXPECT_THAT([&] { batch.copy_prefix(a, a, 0); },
              ::testing::ThrowsMessage<bonsai::InvalidArgument>(HasSubstr("both sequence")));
  EXPECT_THAT([&] { batch.copy_prefix(a, b, 1); },
              ::testing::ThrowsMessage<bonsai::InvalidArgument>(HasSubstr("outside [0, 0]")));
  EXPECT_THAT([&] { batch.truncate(b, 1); },
              ::testing::ThrowsMessage<bonsai::InvalidArgument>(HasSubstr("outside [0, 0]")));
  EXPECT_THAT([&] { batch.remove_sequence(7); },
              ::testing::ThrowsMessage<bonsai::InvalidArgument>(HasSubstr("not open")));

  // A sequence whose tokens would pass n_ctx (64) is refused as context-full.
  const std::vector<int32_t> sixteen(16, 3);
  for (int i = 0; i < 4; ++i) {
    bonsai::SequenceInput input[] = {{a, sixteen, false}};
    batch.step(input);
  }
  EXPECT_EQ(batch.position(a), 64);
  bonsai::SequenceInput full[] = {{b, two, false}, {a, two, false}};
  EXPECT_THROW(batch.step(full), bonsai::ContextFullError);
  EXPECT_EQ(batch.position(b), 0);

  bonsai::BatchOptions none;
  none.max_sequences = 0;
  EXPECT_THROW(engine.create_batch(none), bonsai::InvalidArgument);
}

} // namespace

// What the MTP draft costs on a qwen35 model (docs/speculative.md, "The MTP
// layer as a draft"), through the public API on a Batch made with
// BatchOptions::mtp, at a context of $BONSAI_MTP_DEPTH tokens (default 64):
//  - MtpPropose/K: K proposals (Batch::draft_mtp: the layer's entry for the
//    fed token and K - 1 chained ones, its head for each);
//  - PlainStep: one token, its row of logits (what a step without a draft
//    costs; the trunk's hidden state read as with the draft on);
//  - VerifyStep/K: the fed token and K proposals, a row of logits each (with
//    the checkpoint saved before it), every proposal kept;
//  - RefusedStep/K: the same, every proposal refused: the step, then the
//    cache cut back to the fed token (checkpoint restored, the token run
//    again).
// $BONSAI_MTP_MODEL names the model (make-model --mtp random|agree);
// $BONSAI_MTP_THREADS the plugin's threads (default: its choice).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bonsai/batch.hpp"
#include "bonsai/engine.hpp"

namespace {

int env_int(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

struct Bench {
  std::unique_ptr<bonsai::Engine> engine;
  std::unique_ptr<bonsai::Batch> batch;
  int32_t sequence = 0;
  int32_t depth = 0;
  int32_t next = 0;
  std::vector<int32_t> step_tokens; // the fed token and the proposals a step carries

  static Bench &get() {
    static Bench bench = [] {
      Bench b;
      const char *path = std::getenv("BONSAI_MTP_MODEL");
      if (path == nullptr)
        throw std::runtime_error("set BONSAI_MTP_MODEL to a qwen35 model with an MTP layer");
      bonsai::EngineOptions options;
      options.n_ctx = 1024;
      options.n_threads = env_int("BONSAI_MTP_THREADS", 0);
      b.engine = std::make_unique<bonsai::Engine>(bonsai::Engine::open(path, options));
      bonsai::BatchOptions batch_options;
      batch_options.max_sequences = 1;
      batch_options.mtp = true;
      b.batch = std::make_unique<bonsai::Batch>(b.engine->create_batch(batch_options));
      b.sequence = b.batch->add_sequence();
      b.depth = env_int("BONSAI_MTP_DEPTH", 64);
      const int32_t vocab = b.engine->n_vocab();
      std::vector<int32_t> prompt;
      for (int32_t i = 0; i < b.depth; ++i)
        prompt.push_back((i * 7919 + 11) % vocab);
      const bonsai::SequenceInput input[] = {{b.sequence, prompt, false}};
      b.batch->step(input);
      b.next = 42 % vocab;
      for (int32_t i = 0; i < 9; ++i)
        b.step_tokens.push_back((i * 104729 + 42) % vocab);
      b.step_tokens[0] = b.next;
      return b;
    }();
    return bench;
  }

  // One step of n tokens at the depth, a row each when `all_rows`.
  void step(int32_t n, bool all_rows) {
    const bonsai::SequenceInput input[] = {
        {sequence, std::span<const int32_t>(step_tokens).first(static_cast<size_t>(n)), true,
         all_rows}};
    benchmark::DoNotOptimize(batch->step(input));
  }
};

void MtpPropose(benchmark::State &state) {
  Bench &b = Bench::get();
  const auto k = static_cast<int32_t>(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(b.batch->draft_mtp(b.sequence, b.next, k, 0.0f));
}
BENCHMARK(MtpPropose)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Unit(benchmark::kMillisecond);

void PlainStep(benchmark::State &state) {
  Bench &b = Bench::get();
  for (auto _ : state) {
    b.step(1, false);
    state.PauseTiming();
    b.batch->truncate(b.sequence, b.depth);
    state.ResumeTiming();
  }
}
BENCHMARK(PlainStep)->Unit(benchmark::kMillisecond);

void VerifyStep(benchmark::State &state) {
  Bench &b = Bench::get();
  const auto k = static_cast<int32_t>(state.range(0));
  for (auto _ : state) {
    b.step(k + 1, true);
    state.PauseTiming();
    b.batch->truncate(b.sequence, b.depth);
    state.ResumeTiming();
  }
}
BENCHMARK(VerifyStep)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Unit(benchmark::kMillisecond);

void RefusedStep(benchmark::State &state) {
  Bench &b = Bench::get();
  const auto k = static_cast<int32_t>(state.range(0));
  for (auto _ : state) {
    b.step(k + 1, true);
    b.batch->truncate(b.sequence, b.depth + 1);
    state.PauseTiming();
    b.batch->truncate(b.sequence, b.depth);
    state.ResumeTiming();
  }
}
BENCHMARK(RefusedStep)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Unit(benchmark::kMillisecond);

} // namespace

// How long opening (mmap + full parse and validation) takes for the files the
// runtime opens at start-up: the full Qwen3 vocabulary (~151k tokens and
// merges as metadata strings) and a small model.
#include <string>

#include <benchmark/benchmark.h>

#include "bonsai/core/gguf.hpp"

namespace {

void open_file(benchmark::State &state, const char *name) {
  const std::string path = std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
  for (auto _ : state) {
    auto file = bonsai::gguf::File::open(path);
    benchmark::DoNotOptimize(file.metadata().data());
  }
}

void BM_OpenQwen3Vocab(benchmark::State &state) {
  open_file(state, "qwen3-vocab.gguf");
}
void BM_OpenTinyModel(benchmark::State &state) {
  open_file(state, "tiny-q1.gguf");
}

BENCHMARK(BM_OpenQwen3Vocab)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpenTinyModel)->Unit(benchmark::kMicrosecond);

// Serializing a model-sized metadata block (the vocabulary) plus tensors.
void BM_SerializeVocab(benchmark::State &state) {
  const auto src =
      bonsai::gguf::File::open(std::string(BONSAI_TEST_DATA_DIR) + "/qwen3-vocab.gguf");
  bonsai::gguf::Writer w;
  for (const auto &[key, value] : src.metadata())
    w.set(key, value);
  for (auto _ : state) {
    auto image = w.serialize();
    benchmark::DoNotOptimize(image.data());
  }
}
BENCHMARK(BM_SerializeVocab)->Unit(benchmark::kMillisecond);

} // namespace

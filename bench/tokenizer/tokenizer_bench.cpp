// Tokenizer throughput: encode (bytes/s of input text) on English prose,
// source code and CJK, separately and mixed; decode; loading from GGUF.
#include <benchmark/benchmark.h>
#include <string>
#include <vector>

#include "bonsai/core/gguf.hpp"
#include "bonsai/core/tokenizer.hpp"

namespace {

const std::string kVocabPath = std::string(BONSAI_TEST_DATA_DIR) + "/qwen3-vocab.gguf";

const bonsai::Tokenizer &tokenizer() {
  static const bonsai::Tokenizer t = [] {
    const auto file = bonsai::gguf::File::open(kVocabPath);
    return bonsai::Tokenizer::from_gguf(file);
  }();
  return t;
}

const std::string kProse =
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, counting the "
    "steps out of habit rather than need. There were one hundred and twelve of them, worn "
    "smooth in the middle by a century of boots. At the top he trimmed the wick, polished "
    "the great lens until it threw his own face back at him in a dozen curved fragments, "
    "and waited for the first ship of the night. Storms came in from the west without much "
    "warning; the barometer on the wall was more decoration than instrument. Still, he wrote "
    "its reading in the log: 29.8 inches, falling. Wind from the south-west, 25 knots. "
    "Visibility fair. He had kept that log for eleven years, and before him his aunt had "
    "kept it for thirty-one. Nobody had ever asked to read it.\n\n";

const std::string kCode = R"(template <typename T>
std::vector<T> moving_average(const std::vector<T> &values, size_t window) {
  if (window == 0 || values.size() < window)
    return {};
  std::vector<T> out;
  out.reserve(values.size() - window + 1);
  T sum = std::accumulate(values.begin(), values.begin() + window, T{});
  out.push_back(sum / static_cast<T>(window));
  for (size_t i = window; i < values.size(); ++i) {
    sum += values[i] - values[i - window];   // slide by one element
    out.push_back(sum / static_cast<T>(window));
  }
  return out;
}

def parse_config(path: str) -> dict[str, int]:
    result = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition("=")
            result[key.strip()] = int(value or 0)
    return result
)";

const std::string kCjk =
    "\xE4\xBB\x8A\xE5\xA4\xA9\xE7\x9A\x84\xE5\xA4\xA9\xE6\xB0\x94\xE5\xBE\x88\xE5\xA5\xBD\xEF"
    "\xBC\x8C\xE6\x88\x91\xE4\xBB\xAC\xE5\x8E\xBB\xE5\x85\xAC\xE5\x9B\xAD\xE6\x95\xA3\xE6\xAD"
    "\xA5\xE5\x90\xA7\xE3\x80\x82\xE6\x9C\xBA\xE5\x99\xA8\xE5\xAD\xA6\xE4\xB9\xA0\xE6\xA8\xA1"
    "\xE5\x9E\x8B\xE9\x9C\x80\xE8\xA6\x81\xE5\xA4\xA7\xE9\x87\x8F\xE7\x9A\x84\xE6\x95\xB0\xE6"
    "\x8D\xAE\xE5\x92\x8C\xE8\xAE\xA1\xE7\xAE\x97\xE8\xB5\x84\xE6\xBA\x90\xE3\x80\x82\xE6\x9D"
    "\xB1\xE4\xBA\xAC\xE3\x81\xAF\xE6\x97\xA5\xE6\x9C\xAC\xE3\x81\xAE\xE9\xA6\x96\xE9\x83\xBD"
    "\xE3\x81\xA7\xE3\x81\x99\xE3\x80\x82\xE7\xA7\x81\xE3\x81\xAF\xE6\xAF\x8E\xE6\x9C\x9D\xE3"
    "\x82\xB3\xE3\x83\xBC\xE3\x83\x92\xE3\x83\xBC\xE3\x82\x92\xE9\xA3\xB2\xE3\x81\xBF\xE3\x81"
    "\xBE\xE3\x81\x99\xE3\x80\x82\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4\xEB\x8A\x94\x20\xEC\x95"
    "\x84\xEB\xA6\x84\xEB\x8B\xA4\xEC\x9A\xB4\x20\xEC\x96\xB8\xEC\x96\xB4\xEC\x9E\x85\xEB\x8B"
    "\x88\xEB\x8B\xA4\x2E\n";

std::string repeat_to(const std::string &unit, size_t bytes) {
  std::string s;
  while (s.size() < bytes)
    s += unit;
  return s;
}

void encode_benchmark(benchmark::State &state, const std::string &text) {
  const bonsai::Tokenizer &t = tokenizer();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = t.encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes"] = static_cast<double>(text.size());
  state.counters["tokens"] = static_cast<double>(tokens);
}

constexpr size_t kTextBytes = 4096;

void BM_EncodeMixed(benchmark::State &state) {
  encode_benchmark(state, repeat_to(kProse + kCode + kCjk, kTextBytes));
}
void BM_EncodeProse(benchmark::State &state) {
  encode_benchmark(state, repeat_to(kProse, kTextBytes));
}
void BM_EncodeCode(benchmark::State &state) {
  encode_benchmark(state, repeat_to(kCode, kTextBytes));
}
void BM_EncodeCjk(benchmark::State &state) {
  encode_benchmark(state, repeat_to(kCjk, kTextBytes));
}

void BM_Decode(benchmark::State &state) {
  const std::string text = repeat_to(kProse + kCode + kCjk, kTextBytes);
  const std::vector<int32_t> ids = tokenizer().encode(text);
  for (auto _ : state) {
    auto s = tokenizer().decode(ids);
    benchmark::DoNotOptimize(s.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}

void BM_LoadFromGguf(benchmark::State &state) {
  for (auto _ : state) {
    const auto file = bonsai::gguf::File::open(kVocabPath);
    auto t = bonsai::Tokenizer::from_gguf(file);
    benchmark::DoNotOptimize(&t);
  }
}

BENCHMARK(BM_EncodeMixed);
BENCHMARK(BM_EncodeProse);
BENCHMARK(BM_EncodeCode);
BENCHMARK(BM_EncodeCjk);
BENCHMARK(BM_Decode);
BENCHMARK(BM_LoadFromGguf)->Unit(benchmark::kMillisecond);

} // namespace

// Cost of constrained decoding per token on the Qwen3 vocabulary (151,669
// entries): the check of one sampled token (the usual step) and the full
// mask (taken when the sample is refused), at the positions a JSON reply
// passes through.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bonsai/core/gguf.hpp"
#include "bonsai/core/token_constraint.hpp"
#include "bonsai/core/tokenizer.hpp"

namespace {

using namespace bonsai;

const Tokenizer &tokenizer() {
  static const Tokenizer t = Tokenizer::from_gguf(
      gguf::File::open(std::string(BONSAI_TEST_DATA_DIR) + "/qwen3-vocab.gguf"));
  return t;
}

std::shared_ptr<const TokenIndex> index() {
  static const auto i = std::make_shared<const TokenIndex>(tokenizer());
  return i;
}

const char *kSchema = R"({"type":"object","properties":{
  "name":{"type":"string"},"age":{"type":"integer"},
  "tags":{"type":"array","items":{"type":"string"}},
  "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string",
    "pattern":"^[0-9]{5}$"}},"required":["city","zip"],"additionalProperties":false}},
  "required":["name","age","tags","address"],"additionalProperties":false})";

// Where in the reply the mask is taken.
const char *kPrefixes[] = {
    "",                                             // 0: before the value
    R"({"name": "Ada Lovelace wrote)",              // 1: inside a string
    R"({"name": "Ada", "age": 3)",                  // 2: inside a number
    R"({"name": "Ada", "age": 36, "tags": ["x"],)", // 3: after a comma
    R"({"name": "Ada", "age": 36, "tags": [], "address": {"city": "L", "zip": "12)", // 4: pattern
};

TokenConstraint at(int which) {
  TokenConstraint c(Grammar::json_schema(kSchema), index(), tokenizer().stop_ids());
  for (const int32_t id : tokenizer().encode(kPrefixes[which], false))
    c.accept(id);
  return c;
}

void BM_FullMask(benchmark::State &state) {
  TokenConstraint c = at(static_cast<int>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(c.mask(-1).data());
}
BENCHMARK(BM_FullMask)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

// Formats and bounds, as zod writes them.
const char *kFormats = R"({"type":"object","properties":{
  "email":{"type":"string","format":"email","pattern":"^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$"},
  "site":{"type":"string","format":"uri"},
  "when":{"type":"string","format":"date-time"},
  "count":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},
  "ratio":{"type":"number","exclusiveMinimum":0,"maximum":1}},
  "required":["email","site","when","count","ratio"],"additionalProperties":false})";

const char *kFormatPrefixes[] = {
    R"({"email": "ada.lovelace)",                                    // 0: an e-mail's local part
    R"({"email": "a@b.co", "site": "https://example.com/some/pa)",   // 1: a URI's path
    R"({"email": "a@b.co", "site": "http://x.io", "when": "2024-0)", // 2: a date-time
    R"({"email": "a@b.co", "site": "http://x.io", "when": "2024-01-01T00:00:00Z", "count": 12)", // 3
    R"({"email": "a@b.co", "site": "http://x.io", "when": "2024-01-01T00:00:00Z", "count": 1, "ratio": 0.2)", // 4
};

void BM_FormatMask(benchmark::State &state) {
  TokenConstraint c(Grammar::json_schema(kFormats), index(), tokenizer().stop_ids());
  for (const int32_t id : tokenizer().encode(kFormatPrefixes[state.range(0)], false))
    c.accept(id);
  for (auto _ : state)
    benchmark::DoNotOptimize(c.mask(-1).data());
}
BENCHMARK(BM_FormatMask)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

// The usual step: one sampled token checked (" the", inside the string).
void BM_CheckOneToken(benchmark::State &state) {
  TokenConstraint c = at(1);
  const int32_t token = tokenizer().encode(" the", false)[0];
  for (auto _ : state)
    benchmark::DoNotOptimize(c.allows(token, -1));
}
BENCHMARK(BM_CheckOneToken)->Unit(benchmark::kMicrosecond);

void BM_BuildIndex(benchmark::State &state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(TokenIndex(tokenizer()).n_vocab());
}
BENCHMARK(BM_BuildIndex)->Unit(benchmark::kMillisecond)->Iterations(3);

} // namespace

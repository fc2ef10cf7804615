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

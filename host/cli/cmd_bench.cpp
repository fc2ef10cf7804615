// bonsai bench: prompt-processing (ppN) and text-generation (tgN) throughput
// in llama-bench's terms. ppN evaluates N random tokens as one prefill from an
// empty cache; tgN decodes N tokens one at a time from an empty cache (greedy
// through the backend's argmax, no logits copied). With -d D both run after D
// tokens are already in the cache (llama-bench's n_depth; the D-token prefill
// is not timed). One warm-up run of each test is done first and not counted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "bonsai/engine.hpp"
#include "commands.hpp"
#include "engine_setup.hpp"
#include "options.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

struct BenchArgs {
  EngineArgs engine;
  int32_t n_prompt = 512;    // -p: tokens of the pp test (0 = skip it)
  int32_t n_gen = 128;       // -n: tokens of the tg test (0 = skip it)
  int32_t depth = 0;         // -d: tokens in the cache before each test
  int32_t repetitions = 5;   // -r
  std::string output = "md"; // -o md|json
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<int32_t> random_tokens(int32_t count, int32_t n_vocab) {
  std::mt19937 rng(1234); // fixed: every run and backend sees the same tokens
  std::uniform_int_distribution<int32_t> pick(0, n_vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t &t : tokens)
    t = pick(rng);
  return tokens;
}

// Clears the cache and, for -d, fills it with `depth` untimed tokens.
void prepare(Session &session, const std::vector<int32_t> &depth_tokens) {
  session.reset();
  if (!depth_tokens.empty())
    session.eval(depth_tokens);
}

double time_prompt(Session &session, const std::vector<int32_t> &depth_tokens,
                   const std::vector<int32_t> &tokens) {
  prepare(session, depth_tokens);
  const auto start = Clock::now();
  session.eval(tokens);
  return seconds_since(start);
}

double time_generation(Session &session, const std::vector<int32_t> &depth_tokens,
                       const std::vector<int32_t> &tokens) {
  prepare(session, depth_tokens);
  const auto start = Clock::now();
  for (const int32_t token : tokens)
    session.eval_argmax(std::span<const int32_t>(&token, 1));
  return seconds_since(start);
}

void validate(const BenchArgs &a) {
  if (a.n_prompt < 0 || a.n_gen < 0 || a.depth < 0)
    throw UsageError("-p, -n and -d must be >= 0");
  if (a.n_prompt == 0 && a.n_gen == 0)
    throw UsageError("nothing to measure: -p and -n are both 0");
  if (a.repetitions < 1)
    throw UsageError("-r/--repetitions must be >= 1");
  if (a.output != "md" && a.output != "json")
    throw UsageError("-o/--output must be 'md' or 'json', not '" + a.output + "'");
}

} // namespace

int bench_command(const Args &argv) {
  BenchArgs a;
  CommandLine command_line("bench",
                           "bench -m FILE [-p 512] [-n 128] [-d 0] [-r 5] [-t N] [-o md|json]");
  command_line.engine(a.engine).logging();
  command_line.add_options()("n-prompt,p", po::value(&a.n_prompt)->value_name("N"),
                             "prompt tokens of the ppN test, one prefill (0 = skip; default 512)")(
      "n-gen,n", po::value(&a.n_gen)->value_name("N"),
      "tokens of the tgN test, decoded one by one (0 = skip; default 128)")(
      "depth,d", po::value(&a.depth)->value_name("N"),
      "tokens already in the cache before each test, prefilled untimed (default 0)")(
      "repetitions,r", po::value(&a.repetitions)->value_name("N"),
      "measured repetitions of each test (default 5)")(
      "output,o", po::value(&a.output)->value_name("FMT"), "md (table) or json");
  if (!command_line.parse(argv))
    return kExitOk;
  validate(a);
  // Size the context and the batch to the tests unless the user chose.
  if (!command_line.given("ctx-size"))
    a.engine.n_ctx = a.depth + std::max({a.n_prompt, a.n_gen, 1});
  if (!command_line.given("batch-size"))
    a.engine.n_batch = std::max({a.n_prompt, std::min(a.depth, 512), 1});

  Engine engine = open_engine(a.engine);
  Session session = open_session(engine, a.engine);
  const ModelInfo &model = engine.model();

  const std::vector<int32_t> depth_tokens = random_tokens(a.depth, model.n_vocab);
  std::vector<BenchRow> rows;
  const auto measure = [&](const char *prefix, int32_t count, auto &&timed_run) {
    if (count == 0)
      return;
    const std::vector<int32_t> tokens = random_tokens(count, model.n_vocab);
    timed_run(session, depth_tokens, tokens); // warm-up, not counted
    BenchRow row{std::filesystem::path(model.path).filename().string(),
                 model.weight_bytes,
                 model.n_params,
                 engine.backend().name,
                 a.engine.n_threads,
                 prefix + std::to_string(count) +
                     (a.depth > 0 ? " @ d" + std::to_string(a.depth) : std::string()),
                 count,
                 {}};
    for (int32_t r = 0; r < a.repetitions; ++r)
      row.seconds.push_back(timed_run(session, depth_tokens, tokens));
    rows.push_back(std::move(row));
  };
  measure("pp", a.n_prompt, time_prompt);
  measure("tg", a.n_gen, time_generation);

  const std::string text = a.output == "json" ? format_json(rows) : format_markdown(rows);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

} // namespace bonsai::cli

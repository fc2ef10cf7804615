// bonsai bench: prompt-processing (ppN) and text-generation (tgN) throughput
// in llama-bench's terms. ppN evaluates N random tokens as one prefill from an
// empty cache; tgN decodes N tokens one at a time from an empty cache (greedy
// through the backend's argmax, no logits copied). With -d D both run after D
// tokens are already in the cache (llama-bench's n_depth; the D-token prefill
// is not timed). One warm-up run of each test is done first and not counted.
// -p, -n, -d, -t and -np take comma lists, as llama-bench's do: every
// combination runs, threads outermost (each count opens the engine afresh).
// -np N runs each test on N sessions at once, one thread each, and reports
// their aggregate rate: independent sequences side by side (each session
// reads the weights for itself; a batched multi-sequence step is ABI 1.1's
// future work).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
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
  std::string n_prompt_text = "512";                     // -p: tokens of the pp tests (0 = skip)
  std::string n_gen_text = "128";                        // -n: tokens of the tg tests (0 = skip)
  std::string depth_text = "0";                          // -d: tokens in the cache before each test
  std::string parallel_text = "1";                       // -np: sequences run side by side
  std::vector<int32_t> n_prompt, n_gen, depth, parallel; // the lists above, parsed
  int32_t repetitions = 5;                               // -r
  std::string output = "md";                             // -o md|csv|json|jsonl
};

int32_t largest(const std::vector<int32_t> &values) {
  return *std::max_element(values.begin(), values.end());
}

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

// The timed part of each test, on a prepared session.
double time_prompt(Session &session, const std::vector<int32_t> &tokens) {
  const auto start = Clock::now();
  session.eval(tokens);
  return seconds_since(start);
}

double time_generation(Session &session, const std::vector<int32_t> &tokens) {
  const auto start = Clock::now();
  for (const int32_t token : tokens)
    session.eval_argmax(std::span<const int32_t>(&token, 1));
  return seconds_since(start);
}

// Prepares every session (cache cleared, then the depth tokens), then runs
// `timed_run` on all at once (one thread each); returns the wall time until
// the last one finished.
template <class TimedRun>
double run_side_by_side(std::span<Session> sessions, const std::vector<int32_t> &depth_tokens,
                        const std::vector<int32_t> &tokens, TimedRun &&timed_run) {
  for (Session &session : sessions)
    prepare(session, depth_tokens);
  if (sessions.size() == 1)
    return timed_run(sessions[0], tokens);
  std::vector<std::thread> workers;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto start = Clock::now();
  for (Session &session : sessions)
    workers.emplace_back([&, &session = session] {
      try {
        timed_run(session, tokens);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        failure = std::current_exception();
      }
    });
  for (std::thread &worker : workers)
    worker.join();
  const double seconds = seconds_since(start);
  if (failure)
    std::rethrow_exception(failure);
  return seconds;
}

// Where one row is measured: the engine, the sessions run side by side,
// the thread count it was opened with, and the tokens cached first.
struct TestPoint {
  const Engine &engine;
  std::span<Session> sessions;
  int32_t threads;
  int32_t depth;
  int32_t repetitions;
};

// One warm-up, then `repetitions` timed runs of `count` tokens on every
// session of `point`.
template <class TimedRun>
BenchRow measure(const TestPoint &point, const char *prefix, int32_t count, TimedRun &&timed_run) {
  const ModelInfo &model = point.engine.model();
  const auto parallel = static_cast<int32_t>(point.sessions.size());
  const std::vector<int32_t> depth_tokens = random_tokens(point.depth, model.n_vocab);
  const std::vector<int32_t> tokens = random_tokens(count, model.n_vocab);
  run_side_by_side(point.sessions, depth_tokens, tokens, timed_run); // warm-up, not counted
  BenchRow row{std::filesystem::path(model.path).filename().string(),
               model.weight_bytes,
               model.n_params,
               point.engine.backend().name,
               point.threads,
               prefix + std::to_string(count) +
                   (point.depth > 0 ? " @ d" + std::to_string(point.depth) : std::string()) +
                   (parallel > 1 ? " x" + std::to_string(parallel) : std::string()),
               count * parallel,
               {}};
  for (int32_t r = 0; r < point.repetitions; ++r)
    row.seconds.push_back(run_side_by_side(point.sessions, depth_tokens, tokens, timed_run));
  return row;
}

void parse_lists(BenchArgs &a) {
  a.n_prompt = parse_int_list("-p/--n-prompt", a.n_prompt_text, 0);
  a.n_gen = parse_int_list("-n/--n-gen", a.n_gen_text, 0);
  a.depth = parse_int_list("-d/--depth", a.depth_text, 0);
  a.parallel = parse_int_list("-np/--parallel", a.parallel_text, 1);
  if (largest(a.n_prompt) == 0 && largest(a.n_gen) == 0)
    throw UsageError("nothing to measure: -p and -n are both 0");
  if (a.repetitions < 1)
    throw UsageError("-r/--repetitions must be >= 1");
  if (!parse_bench_format(a.output))
    throw UsageError("-o/--output must be md, csv, json or jsonl, not '" + a.output + "'");
}

} // namespace

int bench_command(const Args &argv) {
  BenchArgs a;
  CommandLine command_line("bench",
                           "bench -m FILE [-p 512] [-n 128] [-d 0] [-r 5] [-t N] [-o md|json]");
  command_line.engine(a.engine, true).logging();
  command_line.add_options()(
      "n-prompt,p", po::value(&a.n_prompt_text)->value_name("N,..."),
      "prompt tokens of the ppN tests, one prefill each (0 = skip; default 512)")(
      "n-gen,n", po::value(&a.n_gen_text)->value_name("N,..."),
      "tokens of the tgN tests, decoded one by one (0 = skip; default 128)")(
      "depth,d", po::value(&a.depth_text)->value_name("N,..."),
      "tokens already in the cache before each test, prefilled untimed (default 0)")(
      "parallel", po::value(&a.parallel_text)->value_name("N,..."),
      "sequences run side by side, one session and thread each; the rate is their sum "
      "(default 1)")("repetitions,r", po::value(&a.repetitions)->value_name("N"),
                     "measured repetitions of each test (default 5)")(
      "output,o", po::value(&a.output)->value_name("FMT"),
      "md (table, default), csv, json (one array) or jsonl (one object per line)");
  if (!command_line.parse(argv))
    return kExitOk;
  parse_lists(a);
  const int32_t max_depth = largest(a.depth);
  // Size the context and the batch to the tests unless the user chose.
  if (!command_line.given("ctx-size"))
    a.engine.n_ctx = max_depth + std::max({largest(a.n_prompt), largest(a.n_gen), 1});
  if (!command_line.given("batch-size"))
    a.engine.n_batch = std::max({largest(a.n_prompt), std::min(max_depth, 512), 1});

  const BenchFormat format = *parse_bench_format(a.output);
  bool any_row = false;
  // The header comes with the first row, so that a model that fails to load
  // prints nothing on stdout; each row is printed as soon as it is measured.
  const auto print_row = [&](const BenchRow &row) {
    const std::string text =
        (any_row ? std::string() : bench_header(format)) + bench_row(format, row, !any_row);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    any_row = true;
  };
  try {
    for (const int32_t threads : a.engine.thread_list) {
      a.engine.n_threads = threads;
      Engine engine = open_engine(a.engine);
      std::vector<Session> sessions;
      for (const int32_t parallel : a.parallel) {
        while (static_cast<int32_t>(sessions.size()) < parallel)
          sessions.push_back(open_session(engine, a.engine));
        for (const int32_t depth : a.depth) {
          const TestPoint point{engine, std::span<Session>(sessions.data(), parallel), threads,
                                depth, a.repetitions};
          for (const int32_t n : a.n_prompt)
            if (n > 0)
              print_row(measure(point, "pp", n, time_prompt));
          for (const int32_t n : a.n_gen)
            if (n > 0)
              print_row(measure(point, "tg", n, time_generation));
        }
      }
    }
  } catch (...) {
    // The rows measured so far stay a well-formed document; the error follows.
    if (any_row)
      std::fputs(bench_footer(format).c_str(), stdout);
    throw;
  }
  std::fputs(bench_footer(format).c_str(), stdout);
  return kExitOk;
}

} // namespace bonsai::cli

// bonsai bench: prompt-processing (ppN) and text-generation (tgN) throughput
// in llama-bench's terms. ppN evaluates N random tokens as one prefill from an
// empty cache; tgN decodes N tokens one at a time from an empty cache (greedy
// through the backend's argmax, no logits copied). With -d D both run after D
// tokens are already in the cache (llama-bench's n_depth; the D-token prefill
// is not timed). One warm-up run of each test is done first and not counted.
// -p, -n, -d, -t and -np take comma lists, as llama-bench's do: every
// combination runs, threads outermost (each count opens the engine afresh).
// While it measures, stderr says which test runs (bench_progress.hpp).
// -np N runs each test on N sequences of one bonsai::Batch, advanced together
// in multi-sequence steps (llama-batched-bench's PP and TG): ppN x P prefills
// P prompts of N tokens in shared steps, tgN x P decodes N tokens on each of
// the P sequences, one shared step per token. The rate is the aggregate of
// all sequences; per sequence it is that divided by P.
// With a draft (-md FILE, --draft-ngram N; docs/speculative.md) each tgN row
// of one sequence is followed by "tgN gen" and "tgN gen+draft": N tokens
// generated greedily from a one-token prompt through Session::generate,
// without and with the draft, so the two differ by the draft alone; stderr
// says how many proposals were kept.
// With --tune (bench_tune.hpp) the CUDA plugin tunes its decode paths afresh
// for every step width met, and each width's table goes to stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench_progress.hpp"
#include "bench_report.hpp"
#include "bench_sizes.hpp"
#include "bench_tune.hpp"
#include "bonsai/engine.hpp"
#include "commands.hpp"
#include "engine_setup.hpp"
#include "options.hpp"
#include "read_bandwidth.hpp"
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
  bool membw = false;                                    // --membw: measure read bandwidth
  bool tune = false;        // --tune: the CUDA decode tuner afresh, its tables on stderr
  double bandwidth_gbs = 0; // --bandwidth: a given read bandwidth in GB/s (checked when given)
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

// The sequences a test runs on: one session (-np 1) or a batch's sequences.
struct Runner {
  Session *session = nullptr;
  Batch *batch = nullptr;
  std::vector<int32_t> sequences; // the batch's, when batch != nullptr

  int32_t parallel() const {
    return session != nullptr ? 1 : static_cast<int32_t>(sequences.size());
  }
};

// Steps every sequence of the batch through `tokens` together, in chunks of
// n_batch / P tokens each; logits only from the last chunk when `logits`.
void step_all(Runner &runner, const std::vector<int32_t> &tokens, bool logits) {
  Batch &batch = *runner.batch;
  const auto size = static_cast<int32_t>(tokens.size());
  const int32_t chunk = std::max(1, batch.n_batch() / runner.parallel());
  std::vector<SequenceInput> inputs;
  for (int32_t done = 0; done < size; done += chunk) {
    const int32_t n = std::min(chunk, size - done);
    const std::span<const int32_t> part(tokens.data() + done, static_cast<size_t>(n));
    inputs.clear();
    for (const int32_t sequence : runner.sequences)
      inputs.push_back({sequence, part, logits && done + n == size});
    batch.step(inputs);
  }
}

// Clears the caches and, for -d, fills them with `depth` untimed tokens.
void prepare(Runner &runner, const std::vector<int32_t> &depth_tokens) {
  if (runner.session != nullptr) {
    runner.session->reset();
    if (!depth_tokens.empty())
      runner.session->eval(depth_tokens);
    return;
  }
  for (const int32_t sequence : runner.sequences)
    runner.batch->truncate(sequence, 0);
  if (!depth_tokens.empty())
    step_all(runner, depth_tokens, false);
}

// The timed part of each test, on prepared sequences.
double time_prompt(Runner &runner, const std::vector<int32_t> &tokens) {
  const auto start = Clock::now();
  if (runner.session != nullptr)
    runner.session->eval(tokens);
  else
    step_all(runner, tokens, true);
  return seconds_since(start);
}

// Greedy generation of tokens.size() tokens through Session::generate from
// the last of `tokens` as the prompt (after the cache's depth), with
// `draft` when set; counts the proposals over every run.
struct GenerateRun {
  const DraftOptions *draft = nullptr;
  int64_t drafted = 0, kept = 0;

  double operator()(Runner &runner, const std::vector<int32_t> &tokens) {
    GenerateRequest request;
    request.prompt_tokens = {tokens.back()};
    request.continue_session = true;
    request.n_predict = static_cast<int32_t>(tokens.size());
    request.sampling.temperature = 0;
    request.stop_tokens.emplace(); // exactly n tokens
    if (draft != nullptr)
      request.draft = *draft;
    const auto start = Clock::now();
    const GenerateResult result = runner.session->generate(request);
    const double seconds = seconds_since(start);
    drafted += result.stats.drafted_tokens;
    kept += result.stats.accepted_tokens;
    return seconds;
  }
};

double time_generation(Runner &runner, const std::vector<int32_t> &tokens) {
  const auto start = Clock::now();
  for (const int32_t token : tokens) {
    const std::span<const int32_t> one(&token, 1);
    if (runner.session != nullptr)
      runner.session->eval_argmax(one);
    else
      step_all(runner, {token}, true); // one shared step: every sequence's next token
  }
  return seconds_since(start);
}

// Where one row is measured: the engine, the sequences, the thread count it
// was opened with, and the tokens cached first.
struct TestPoint {
  const Engine &engine;
  Runner &runner;
  int32_t threads;
  int32_t depth;
  int32_t repetitions;
  std::optional<double> read_bytes_per_s; // --membw, for these threads
  int32_t kv_value_bytes;                 // bytes per cached key or value element
};

// Bytes a tg row reads per generated token: the weights once per step,
// shared by the step's sequences, each sequence's keys and values at its mean
// position over the test and, for qwen35, its recurrent state, read and
// written once per token.
double tg_bytes_per_token(const TestPoint &point, int32_t count) {
  const ModelInfo &m = point.engine.model();
  const double kv_per_position =
      2.0 * m.n_kv_layers * m.n_head_kv * m.head_dim * point.kv_value_bytes;
  const double mean_positions = point.depth + (count + 1) / 2.0;
  return static_cast<double>(m.decode_weight_bytes) / point.runner.parallel() +
         kv_per_position * mean_positions + 2.0 * static_cast<double>(m.recurrent_state_bytes);
}

// llama-bench's name of a test: "pp512", "tg128 @ d4096", with " x4" for -np.
std::string test_name(const char *prefix, int32_t count, int32_t depth, int32_t parallel) {
  return prefix + std::to_string(count) +
         (depth > 0 ? " @ d" + std::to_string(depth) : std::string()) +
         (parallel > 1 ? " x" + std::to_string(parallel) : std::string());
}

// One warm-up, then `repetitions` timed runs of `count` tokens on every
// sequence of `point`.
template <class TimedRun>
BenchRow measure(const TestPoint &point, const char *prefix, int32_t count, TimedRun &&timed_run) {
  const ModelInfo &model = point.engine.model();
  const int32_t parallel = point.runner.parallel();
  const std::vector<int32_t> depth_tokens = random_tokens(point.depth, model.n_vocab);
  const std::vector<int32_t> tokens = random_tokens(count, model.n_vocab);
  prepare(point.runner, depth_tokens);
  timed_run(point.runner, tokens); // warm-up, not counted
  BenchRow row{std::filesystem::path(model.path).filename().string(),
               model.weight_bytes,
               model.n_params,
               point.engine.backend().name,
               point.threads,
               test_name(prefix, count, point.depth, parallel),
               count * parallel,
               {},
               std::nullopt};
  for (int32_t r = 0; r < point.repetitions; ++r) {
    prepare(point.runner, depth_tokens);
    row.seconds.push_back(timed_run(point.runner, tokens));
  }
  if (point.read_bytes_per_s)
    row.bandwidth =
        BandwidthFigures{*point.read_bytes_per_s,
                         std::string(prefix) == "tg" ? tg_bytes_per_token(point, count) : 0};
  return row;
}

// "tgN gen" and "tgN gen+draft" (see the top of the file), and the share of
// proposals kept on stderr.
template <class PrintRow>
void measure_drafted(const TestPoint &point, int32_t n, const DraftOptions &draft,
                     BenchProgress &progress, PrintRow &&print_row) {
  const std::string base = test_name("tg", n, point.depth, 1);
  GenerateRun plain;
  progress.start_test(base + " gen", point.threads);
  BenchRow row = measure(point, "tg", n, plain);
  row.test = base + " gen";
  print_row(row);
  GenerateRun drafted{&draft};
  progress.start_test(base + " gen+draft", point.threads);
  row = measure(point, "tg", n, drafted);
  row.test = base + " gen+draft";
  print_row(row);
  progress.clear();
  std::fprintf(
      stderr, "%s gen+draft: %lld proposals verified, %lld kept (%.0f%%; warm-up included)\n",
      base.c_str(), static_cast<long long>(drafted.drafted), static_cast<long long>(drafted.kept),
      drafted.drafted > 0
          ? 100.0 * static_cast<double>(drafted.kept) / static_cast<double>(drafted.drafted)
          : 0.0);
}

// The KV cache's bytes per element: 2 where bonsai's CPU or CUDA plugin was
// asked for its f16 cache (--backend-options kv=f16), else 4 (f32, every
// plugin's default).
int32_t kv_value_bytes_for(const Engine &engine, const EngineArgs &args) {
  std::string options = ";" + args.backend_options + ";";
  options.erase(std::remove(options.begin(), options.end(), ' '), options.end());
  const std::string backend = engine.backend().name;
  const bool f16 =
      (backend == "cpu" || backend == "cuda") && options.find(";kv=f16;") != std::string::npos;
  return f16 ? 2 : 4;
}

// Rows the run prints: every combination, 0 in -p or -n skipping that test;
// with a draft, two more per tg row of one sequence.
int count_tests(const BenchArgs &a, bool drafted) {
  const auto nonzero = [](const std::vector<int32_t> &v) {
    return static_cast<int>(std::count_if(v.begin(), v.end(), [](int32_t n) { return n > 0; }));
  };
  const auto per_depth = static_cast<int>(a.engine.thread_list.size() * a.depth.size());
  const auto singles = static_cast<int>(std::count(a.parallel.begin(), a.parallel.end(), 1));
  return per_depth * static_cast<int>(a.parallel.size()) *
             (nonzero(a.n_prompt) + nonzero(a.n_gen)) +
         (drafted ? per_depth * singles * 2 * nonzero(a.n_gen) : 0);
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

// --bandwidth: a positive, finite number of GB/s, and not beside --membw
// (one yardstick per run). Returns it in bytes per second, or nothing.
std::optional<double> given_bandwidth(const BenchArgs &a, bool given) {
  if (!given)
    return std::nullopt;
  if (!std::isfinite(a.bandwidth_gbs) || a.bandwidth_gbs <= 0)
    throw UsageError("--bandwidth must be a positive number of GB/s");
  if (a.membw)
    throw UsageError(
        "--membw and --bandwidth exclude each other: measure the bandwidth or give it");
  return a.bandwidth_gbs * 1e9;
}

} // namespace

int bench_command(const Args &argv) {
  BenchArgs a;
  CommandLine command_line(
      "bench", "bench -m FILE [-p N,..] [-n N,..] [-d N,..] [-t N,..] [-np "
               "N,..] [-r N] [--membw | --bandwidth GB/s] [--tune] [-o md|csv|json|jsonl]");
  DraftArgs draft_args;
  command_line.engine(a.engine, true).draft(draft_args).logging();
  command_line.add_options()(
      "n-prompt,p", po::value(&a.n_prompt_text)->value_name("N,..."),
      "prompt tokens of the ppN tests, one prefill each (0 = skip; default 512)")(
      "n-gen,n", po::value(&a.n_gen_text)->value_name("N,..."),
      "tokens of the tgN tests, decoded one by one (0 = skip; default 128)")(
      "depth,d", po::value(&a.depth_text)->value_name("N,..."),
      "tokens already in the cache before each test, prefilled untimed (default 0)")(
      "parallel", po::value(&a.parallel_text)->value_name("N,..."),
      "sequences advanced together in multi-sequence steps (one batch); the rate is their "
      "sum (default 1; -np N,... is the same)")("repetitions,r",
                                                po::value(&a.repetitions)->value_name("N"),
                                                "measured repetitions of each test (default 5)")(
      "output,o", po::value(&a.output)->value_name("FMT"),
      "md (table, default), csv, json (one array) or jsonl (one object per line)")(
      "membw", po::bool_switch(&a.membw),
      "measure the memory read bandwidth with each thread count and state every tg row as a "
      "share of the limit it sets (weight + KV bytes per token)")(
      "bandwidth", po::value(&a.bandwidth_gbs)->value_name("GB/s"),
      "state every tg row as a share of the limit this read bandwidth sets, instead of "
      "measuring the host's: for a device whose memory bench cannot measure (a GPU)")(
      "tune", po::bool_switch(&a.tune),
      "CUDA: tune the decode paths afresh for every step width met (backend option "
      "tune=fresh) and print each width's candidates and their times on stderr");
  if (!command_line.parse(argv))
    return kExitOk;
  parse_lists(a);
  const std::optional<double> fixed_bandwidth = given_bandwidth(a, command_line.given("bandwidth"));
  const bool bandwidth_columns = a.membw || fixed_bandwidth.has_value();
  const int32_t max_depth = largest(a.depth);
  // Size the context and the batch to the tests unless the user chose
  // (bench_sizes.hpp).
  const BenchSizes sizes =
      bench_sizes({largest(a.n_prompt), largest(a.n_gen), max_depth, largest(a.parallel),
                   draft_args.any() ? draft_args.options.max : 0});
  if (!command_line.given("ctx-size"))
    a.engine.n_ctx = sizes.n_ctx;
  if (!command_line.given("batch-size"))
    a.engine.n_batch = sizes.n_batch;

  std::optional<TuneTables> tune_tables;
  if (a.tune)
    tune_tables.emplace(a.engine.backend_options);
  const BenchFormat format = *parse_bench_format(a.output);
  BenchProgress progress(count_tests(a, draft_args.any()), a.engine.progress);
  bool any_row = false;
  // The header comes with the first row, so that a model that fails to load
  // prints nothing on stdout; each row is printed as soon as it is measured.
  const auto print_row = [&](const BenchRow &row) {
    progress.clear();
    const std::string text = (any_row ? std::string() : bench_header(format, bandwidth_columns)) +
                             bench_row(format, row, !any_row);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    any_row = true;
  };
  try {
    for (const int32_t threads : a.engine.thread_list) {
      a.engine.n_threads = threads;
      std::optional<double> read_bytes_per_s = fixed_bandwidth;
      if (a.membw) { // before the model loads, so its pages do not compete
        const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
        progress.doing("measuring the read bandwidth", n);
        read_bytes_per_s = measure_read_bandwidth(ReadBandwidthRun{n});
        progress.clear();
      }
      Engine engine = open_engine(a.engine);
      DraftRuntime draft;
      open_draft(draft_args, engine, a.engine, draft);
      const int32_t kv_value_bytes = kv_value_bytes_for(engine, a.engine);
      std::vector<int32_t> batch_sequences;
      std::optional<Session> session;
      std::optional<Batch> batch;
      for (const int32_t parallel : a.parallel) {
        Runner runner;
        if (parallel == 1) {
          if (!session)
            session.emplace(open_session(engine, a.engine));
          runner.session = &*session;
        } else {
          if (!batch)
            batch.emplace(open_batch(engine, a.engine, largest(a.parallel)));
          runner.batch = &*batch;
          while (batch_sequences.size() < static_cast<size_t>(parallel))
            batch_sequences.push_back(batch->add_sequence());
          runner.sequences.assign(batch_sequences.begin(), batch_sequences.begin() + parallel);
        }
        for (const int32_t depth : a.depth) {
          const TestPoint point{engine,        runner,           threads,       depth,
                                a.repetitions, read_bytes_per_s, kv_value_bytes};
          for (const int32_t n : a.n_prompt)
            if (n > 0) {
              progress.start_test(test_name("pp", n, depth, parallel), threads);
              print_row(measure(point, "pp", n, time_prompt));
            }
          for (const int32_t n : a.n_gen)
            if (n > 0) {
              progress.start_test(test_name("tg", n, depth, parallel), threads);
              print_row(measure(point, "tg", n, time_generation));
              if (draft_args.any() && parallel == 1)
                measure_drafted(point, n, draft.options, progress, print_row);
            }
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

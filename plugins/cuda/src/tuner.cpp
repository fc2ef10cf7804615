#include "tuner.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <vector>

#include "kernel_sources.hpp"
#include "persistent_step.hpp"
#include "plugin_error.hpp"
#include "tune_candidates.hpp"
#include "tune_choice.hpp"
#include "tune_runs.hpp"
#include "tune_timer.hpp"

namespace bonsai::cuda {
namespace {

using Clock = std::chrono::steady_clock;

// Timed runs of a candidate at most, after the checks: the median of up
// to this many, taken in turns with the other candidates while the budget
// lasts (a candidate left without one keeps its check run's time).
constexpr size_t kMaxTimedRuns = 30;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Whether decode=auto tunes at all in this context.
bool tuning_on(const Context &ctx) {
  return ctx.options.decode == DecodeMode::automatic && ctx.options.tuning.tune != TuneMode::off &&
         ctx.tuner.timing_error.empty();
}

bool tuning_wanted(const Context &ctx, const BoundModel &m, const StepState &step) {
  return tuning_on(ctx) && !m.layered && persistent_step_fits(m, step) &&
         !m.persistent->tuned[static_cast<size_t>(step.n_tokens)];
}

// Once per model whose steps have one path only: why nothing is tuned.
void note_nothing_to_tune(const Context &ctx, BoundModel &m) {
  if (!tuning_on(ctx) || m.tune_note_logged || (!m.layered && m.persistent))
    return;
  m.tune_note_logged = true;
  ctx.log.info(m.layered ? "decode tune: nothing to tune for this model: its layers are qwen35's "
                           "kinds, which run launch by launch only (not on the persistent kernel)"
                         : "decode tune: nothing to tune for this model: the persistent kernel "
                           "does not run it (said above), so its steps have one path");
}

// Context for one candidate's runs.
struct Bench {
  Context &ctx;
  BoundModel &m;
  const StepState &step;
  const StepOutputs &reference;
  StepTimer &timer;
};

// One timed run of `choice`: its microseconds, or throws.
double timed_run(const Bench &b, const DecodeChoice &choice) {
  b.timer.start();
  queue_choice_run(b.ctx, b.m, b.step, choice);
  b.timer.stop();
  return b.timer.elapsed_us();
}

// The candidate's row after its check run, which is also its first time:
// passed with that time, or failed with why.
CandidateTime check(const Bench &b, const DecodeCandidate &candidate) {
  CandidateTime row;
  row.name = candidate.name;
  try {
    const double first = timed_run(b, candidate.choice);
    if (std::string why = run_failure(b.m, candidate.choice); !why.empty()) {
      row.note = why;
      return row;
    }
    const StepOutputs out = read_step_outputs(b.ctx, b.m, b.step.n_tokens);
    if (std::string why = check_step_outputs(b.reference, out); !why.empty()) {
      row.note = why;
      return row;
    }
    row.us = first;
    row.passed = true;
  } catch (const std::exception &error) {
    row.note = error.what();
  }
  return row;
}

// Timed runs of the candidates that passed, one of each in turn, until
// each has kMaxTimedRuns or the budget is spent; then each one's median.
void time_in_turns(const Bench &b, const std::vector<DecodeCandidate> &candidates,
                   std::vector<CandidateTime> &table, Clock::time_point started, double budget_ms) {
  std::vector<std::vector<double>> times(candidates.size());
  for (bool more = true; more;) {
    more = false;
    for (size_t i = 0; i < candidates.size() && ms_since(started) < budget_ms; ++i) {
      CandidateTime &row = table[i];
      if (!row.passed || times[i].size() >= kMaxTimedRuns)
        continue;
      try {
        times[i].push_back(timed_run(b, candidates[i].choice));
        if (std::string why = run_failure(b.m, candidates[i].choice); !why.empty())
          row = {row.name, -1, false, "a timed run: " + why};
      } catch (const std::exception &error) {
        row = {row.name, -1, false, std::string("a timed run: ") + error.what()};
      }
      more = true;
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i)
    if (table[i].passed && !times[i].empty())
      table[i].us = median(times[i]);
}

void log_table(const Context &ctx, const TuneRecord &record, const std::string &source) {
  for (const std::string &line : tune_table_lines(record, source))
    ctx.log.info(line);
}

// The cached choice of `key`, or nullopt (a miss, or a file it logs as
// stale or damaged, which the tuning after it rewrites).
std::optional<DecodeChoice> cached_choice(const Context &ctx, const TuneKey &key,
                                          const std::vector<DecodeCandidate> &candidates) {
  const TuneCache &cache = *ctx.tuner.cache;
  const std::string path = cache.entry_path(key).string();
  TuneFound found = cache.load(key, {ctx.tuner.driver_version, ctx.tuner.build});
  if (found.lookup == TuneLookup::hit) {
    for (const DecodeCandidate &c : candidates)
      if (c.name == found.record.choice) {
        log_table(ctx, found.record, "cached in " + path);
        return c.choice;
      }
    found.lookup = TuneLookup::stale;
    found.why = "its choice " + found.record.choice + " is not a candidate here";
  }
  if (found.lookup == TuneLookup::corrupt)
    ctx.log.warn("decode tune: ignoring " + path + ", which is damaged (" + found.why +
                 "); tuning again and rewriting it");
  else if (found.lookup == TuneLookup::stale)
    ctx.log.info("decode tune: " + path + " is stale (" + found.why + "); tuning again");
  return std::nullopt;
}

} // namespace

TuneKey tune_key(const Context &ctx, const BoundModel &m, int width) {
  const ModelDims &d = m.dims;
  const ContextOptions &o = ctx.options;
  const char *layers = kernel_type_suffix(m.layers[0].wq->layout.type);
  const char *head = kernel_type_suffix(m.lm_head->layout.type);
  TuneKey key;
  key.device = ctx.tuner.device;
  key.model = strformat("%d layers, embd %d, %d/%d heads of %d, ff %d, vocab %d, %s, head %s, "
                        "kv %s",
                        d.n_layer, d.n_embd, d.n_head, d.n_head_kv, d.head_dim, d.n_ff, d.n_vocab,
                        layers != nullptr ? layers : "?", head != nullptr ? head : "?",
                        m.kv_bytes == 2 ? "f16" : "f32");
  key.options = strformat(
      "graphs=%s;int8_input=%s;pdl=%s;persistent_quantize=%s;persistent_matmul=%s;"
      "persistent_records=%s;persistent_keys_per_range=%d",
      o.use_graphs ? "on" : "off", o.int8_input_per_token ? "token" : "block",
      ctx.device->programmatic_launch() ? "on" : "off",
      m.persistent && m.persistent->producer_quantize ? "producer" : "consumer",
      m.persistent && m.persistent->mma ? "mma" : "dp4a",
      ctx.kernels->persistent_held() ? "registers" : "shared", o.persistent_keys_per_range);
  key.width = width;
  return key;
}

void tune_step_width(Context &ctx, BoundModel &m, const StepState &step) {
  note_nothing_to_tune(ctx, m);
  if (!tuning_wanted(ctx, m, step))
    return;
  PersistentDecode &p = *m.persistent;
  const int width = step.n_tokens;
  const DecodeChoice fixed = fixed_decode_choice(ctx, m, step);
  const std::vector<DecodeCandidate> candidates =
      decode_candidates({true, p.head_available, stream_fits(ctx, m, width, kTunedStreamSlots),
                         fused_fits(ctx, m, step)},
                        fixed);
  const TuneKey key = tune_key(ctx, m, width);
  if (ctx.options.tuning.tune == TuneMode::on && ctx.tuner.cache)
    if (const std::optional<DecodeChoice> cached = cached_choice(ctx, key, candidates)) {
      p.tuned[static_cast<size_t>(width)] = *cached;
      return;
    }

  const Clock::time_point started = Clock::now();
  StepTimer timer(*ctx.device);
  queue_reference_run(ctx, m, step);
  const StepOutputs reference = read_step_outputs(ctx, m, width);
  const Bench bench{ctx, m, step, reference, timer};
  TuneRecord record{key, {ctx.tuner.driver_version, ctx.tuner.build}, "", {}};
  for (const DecodeCandidate &candidate : candidates)
    record.table.push_back(check(bench, candidate));
  time_in_turns(bench, candidates, record.table, started, ctx.options.tuning.tune_budget_ms);
  const int best = fastest_passed(record.table);
  if (best < 0) {
    ctx.log.warn(strformat("decode tune: no candidate passed its check at %d token%s a step; "
                           "keeping the fixed choice %s",
                           width, width == 1 ? "" : "s", choice_options(fixed).c_str()));
    p.tuned[static_cast<size_t>(width)] = fixed;
    return;
  }
  record.choice = candidates[static_cast<size_t>(best)].name;
  p.tuned[static_cast<size_t>(width)] = candidates[static_cast<size_t>(best)].choice;
  log_table(ctx, record, strformat("measured in %.0f ms", ms_since(started)));
  if (ctx.tuner.cache)
    if (const std::string why = ctx.tuner.cache->store(record); !why.empty())
      ctx.log.warn("decode tune: the choice is not cached: " + why);
}

} // namespace bonsai::cuda

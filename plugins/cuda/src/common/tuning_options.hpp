#pragma once
// The context options of the decode autotuner (docs/cuda.md, "The decode
// tuner") and of the persistent kernel's levers it tries as candidates. Parsed beside
// the others (options.cpp hands every key it does not know here first).
#include <string>

namespace bonsai::cuda {

// tune=on|off|fresh: under decode=auto, whether steps of a width (tokens a
// step) not seen before time the candidate decode paths and take the
// fastest that passes its check (on, the default, with the choice cached on
// disk; fresh: the same, ignoring what the cache holds), or take today's
// fixed choice (off).
enum class TuneMode { on, off, fresh };

struct TuningOptions {
  TuneMode tune = TuneMode::on;
  // tune_budget_ms=N: the wall time one width's tuning may take (default
  // 3000). The reference run and one checked run of each candidate always
  // happen; the timed runs after them (up to 30 a candidate, in turns) stop
  // when it is spent, and a candidate left without one keeps its checked
  // run's time, which includes first-use work (its instruction list, the
  // graph's capture).
  int tune_budget_ms = 3000;
  // persistent_shares=tiles|balanced: how the persistent plan shares each
  // matmul stage out among the blocks (persistent_plan.hpp): ranges of whole
  // 16-row tiles (tiles, the default), or units of a few rows spread so that
  // no block's share passes another's by more than a unit a round
  // (balanced). A tuner candidate; off by default until a GPU measures it.
  bool balanced_shares = false;
  // persistent_stream=off|2|3|4: the persistent kernel's weight buffer as
  // that many slots, the weights of a block's next N - 1 instructions
  // streaming into them (cp.async) while it waits for and computes the
  // current one (a plan cut for a slot, N times smaller); off (1, the
  // default): one buffer, filled before each wait for that instruction. A
  // tuner candidate (3: two instructions ahead); not yet measured.
  int stream_slots = 1;
  // persistent_qkv=apart|fused: each layer's Q/K/V a stage of its own, its
  // attention the next (apart, the default), or one stage whose
  // instructions each compute a share of a KV head's Q/K/V rows and then,
  // once that head's shares are all written, its attention (fused: no
  // stage-wide handoff between the two). Where every such instruction
  // fits the grid at once; a tuner candidate; not yet measured.
  bool fused_qkv_attention = false;
};

// Parses `key`=`value` into `out` when the key is one of the above: true.
// False for any other key. Throws PluginError(INVALID_ARGUMENT) for a bad value.
bool parse_tuning_option(const std::string &key, const std::string &value, TuningOptions &out);

} // namespace bonsai::cuda

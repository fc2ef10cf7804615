#pragma once
// Where a persistent decode step's time goes (option persistent_trace).
// The kernel notes five times per instruction (PK_MARK_* of
// kernels/persistent.cuh); this turns a launch's marks into each stage's
// share of the step's critical path and what it was spent on. Pure: no
// device, so its arithmetic is tested directly.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "persistent_plan.hpp"

namespace bonsai::cuda {

// The times an instruction notes, in order (PK_MARK_START ... PK_MARK_SIGNAL).
enum class PersistentMark : int {
  start = 0,  // its block took it up (before the weights' copy starts)
  go = 1,     // its wait ended
  ready = 2,  // inputs staged, weights landed (attention: rows normed and rotated)
  end = 3,    // outputs written, before the fence
  signal = 4, // its counter update issued
};
inline constexpr int kPersistentMarks = 5; // PK_MARKS

// One stage of one layer in one launch, in nanoseconds.
struct PersistentStageTiming {
  // From the moment its inputs were complete (the last instruction it waits
  // for signalled; the launch's first mark for layer 0's first stage) to
  // its own last signal: its share of the step.
  double span = 0;
  // Medians over the stage's instructions of: the wait's end after the
  // inputs were complete, or after the block took the instruction up when
  // that came later ("seen"); then go to ready, ready to end, end to signal.
  double seen = 0, inputs = 0, compute = 0, publish = 0;
  // The span beyond the median instruction's signal: how far the last one trailed.
  double trail = 0;
};

// The timings of every (layer, stage) of one launch of `plan`, whose marks
// are kPersistentMarks per instruction (PK_MARKS of the kernel, in order).
// Index: the stage's counter (layer * kPersistentStages + stage; the LM
// head's and the argmax's after the layers', persistent_head_counter).
// Throws PluginError on marks of the wrong size.
std::vector<PersistentStageTiming> persistent_stage_timings(std::span<const PersistentInstr> plan,
                                                            std::span<const uint64_t> marks);

// Launches added up: the mean per layer of each stage's timings.
class PersistentTraceSummary {
public:
  void add(std::span<const PersistentInstr> plan, std::span<const uint64_t> marks, int n_tokens);
  int launches() const { return launches_; }
  // Stage `stage`'s timings averaged over layers and launches (the LM head
  // and the argmax: over the launches that had them).
  PersistentStageTiming mean(PersistentStage stage) const;
  // The mean of launch time (first mark to last signal), in nanoseconds.
  double mean_launch_ns() const;
  // A table in microseconds, with what each column means.
  std::string report() const;

private:
  std::array<PersistentStageTiming, kPersistentStages> sums_{};
  long stage_layers_ = 0;                            // (layer, launch) pairs added, per stage
  std::array<PersistentStageTiming, 2> head_sums_{}; // the LM head, the argmax
  long head_launches_ = 0;                           // launches that had them
  double launch_ns_ = 0;
  int launches_ = 0;
  int layers_ = 0;
  int fewest_tokens_ = 0, most_tokens_ = 0;
  uint64_t finest_step_ns_ = 0; // the smallest nonzero interval between marks seen
};

// One line per instruction of a launch, times relative to its first mark:
// "instruction,block,layer,stage,range_begin,range_end,part,t_start,t_go,
// t_ready,t_end,t_signal" (range: the instruction's tiles, or for attention
// its sequence and KV head).
std::string persistent_trace_csv(std::span<const PersistentInstr> plan,
                                 std::span<const uint64_t> marks, int blocks);

} // namespace bonsai::cuda

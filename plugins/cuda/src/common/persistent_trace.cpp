#include "persistent_trace.hpp"

#include <algorithm>
#include <limits>

#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

struct Marks {
  std::span<const uint64_t> all;
  double at(size_t instr, PersistentMark mark) const {
    return static_cast<double>(all[instr * kPersistentMarks + static_cast<size_t>(mark)]);
  }
};

void check_sizes(std::span<const PersistentInstr> plan, std::span<const uint64_t> marks) {
  if (plan.empty() || marks.size() != plan.size() * kPersistentMarks)
    fail_invalid(strformat("persistent decode trace: %zu marks for %zu instructions (expected %d "
                           "each)",
                           marks.size(), plan.size(), kPersistentMarks));
  for (const PersistentInstr &instr : plan)
    if (!persistent_known_stage(instr.op) || instr.layer < 0)
      fail_invalid(strformat("persistent decode trace: an instruction of stage %d, layer %d",
                             instr.op, instr.layer));
}

int layer_count(std::span<const PersistentInstr> plan) {
  int layers = 0;
  for (const PersistentInstr &instr : plan)
    layers = std::max(layers, instr.layer + 1);
  return layers;
}

std::string fixed(double ns) {
  return strformat("%8.2f", ns / 1000.0);
}

} // namespace

std::vector<PersistentStageTiming> persistent_stage_timings(std::span<const PersistentInstr> plan,
                                                            std::span<const uint64_t> marks) {
  check_sizes(plan, marks);
  const Marks m{marks};
  const int groups = persistent_counter_count(layer_count(plan)); // the LM head's last
  double first = std::numeric_limits<double>::max();
  // Each counter's last signal, and each group's instructions.
  std::vector<double> last_signal(static_cast<size_t>(groups), 0);
  std::vector<std::vector<size_t>> members(static_cast<size_t>(groups));
  for (size_t i = 0; i < plan.size(); ++i) {
    first = std::min(first, m.at(i, PersistentMark::start));
    const auto counter = static_cast<size_t>(plan[i].signal_counter);
    if (counter >= last_signal.size())
      fail_invalid(strformat("persistent decode trace: instruction %zu signals counter %d of %d", i,
                             plan[i].signal_counter, groups));
    last_signal[counter] = std::max(last_signal[counter], m.at(i, PersistentMark::signal));
    members[counter].push_back(i);
  }
  std::vector<PersistentStageTiming> timings(static_cast<size_t>(groups));
  for (size_t g = 0; g < members.size(); ++g) {
    if (members[g].empty())
      continue;
    const PersistentInstr &head = plan[members[g].front()];
    const double released =
        head.wait_target > 0 ? last_signal[static_cast<size_t>(head.wait_counter)] : first;
    std::vector<double> seen, inputs, compute, publish, signals;
    for (const size_t i : members[g]) {
      const double start = m.at(i, PersistentMark::start), go = m.at(i, PersistentMark::go);
      const double ready = m.at(i, PersistentMark::ready), end = m.at(i, PersistentMark::end);
      const double signal = m.at(i, PersistentMark::signal);
      seen.push_back(go - std::max(start, released));
      inputs.push_back(ready - go);
      compute.push_back(end - ready);
      publish.push_back(signal - end);
      signals.push_back(signal);
    }
    PersistentStageTiming &t = timings[g];
    t.span = last_signal[g] - released;
    t.seen = median(seen);
    t.inputs = median(inputs);
    t.compute = median(compute);
    t.publish = median(publish);
    t.trail = last_signal[g] - median(signals);
  }
  return timings;
}

void PersistentTraceSummary::add(std::span<const PersistentInstr> plan,
                                 std::span<const uint64_t> marks, int n_tokens) {
  const std::vector<PersistentStageTiming> timings = persistent_stage_timings(plan, marks);
  const int layers = static_cast<int>(timings.size()) / kPersistentStages - 1;
  const bool has_head = std::any_of(plan.begin(), plan.end(), [](const PersistentInstr &instr) {
    return instr.op == static_cast<int32_t>(PersistentStage::head);
  });
  for (size_t g = 0; g < timings.size(); ++g) {
    const size_t layer_groups = static_cast<size_t>(layers) * kPersistentStages;
    if (g >= layer_groups && (!has_head || g - layer_groups >= head_sums_.size()))
      continue;
    PersistentStageTiming &sum =
        g < layer_groups ? sums_[g % kPersistentStages] : head_sums_[g - layer_groups];
    sum.span += timings[g].span;
    sum.seen += timings[g].seen;
    sum.inputs += timings[g].inputs;
    sum.compute += timings[g].compute;
    sum.publish += timings[g].publish;
    sum.trail += timings[g].trail;
  }
  stage_layers_ += layers;
  head_launches_ += has_head ? 1 : 0;
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const uint64_t *mark = marks.data() + i * kPersistentMarks;
    first = std::min(first, mark[0]);
    last = std::max(last, mark[kPersistentMarks - 1]);
    for (int k = 1; k < kPersistentMarks; ++k)
      if (mark[k] > mark[k - 1] &&
          (finest_step_ns_ == 0 || mark[k] - mark[k - 1] < finest_step_ns_))
        finest_step_ns_ = mark[k] - mark[k - 1];
  }
  launch_ns_ += static_cast<double>(last - first);
  fewest_tokens_ = launches_ == 0 ? n_tokens : std::min(fewest_tokens_, n_tokens);
  most_tokens_ = std::max(most_tokens_, n_tokens);
  layers_ = layers;
  ++launches_;
}

PersistentStageTiming PersistentTraceSummary::mean(PersistentStage stage) const {
  const bool head = stage >= PersistentStage::head;
  PersistentStageTiming t =
      head ? head_sums_[static_cast<size_t>(stage) - static_cast<size_t>(PersistentStage::head)]
           : sums_[static_cast<size_t>(stage)];
  const long count = head ? head_launches_ : stage_layers_;
  if (count == 0)
    return t;
  const auto n = static_cast<double>(count);
  t.span /= n, t.seen /= n, t.inputs /= n, t.compute /= n, t.publish /= n, t.trail /= n;
  return t;
}

double PersistentTraceSummary::mean_launch_ns() const {
  return launches_ == 0 ? 0 : launch_ns_ / launches_;
}

std::string PersistentTraceSummary::report() const {
  std::string out = strformat("persistent decode trace: %d launches of %d to %d tokens, %d layers; "
                              "microseconds per layer, means over layers and launches\n",
                              launches_, fewest_tokens_, most_tokens_, layers_);
  out += strformat("%-18s %8s %8s %8s %8s %8s %8s\n", "stage", "span", "seen", "inputs", "compute",
                   "publish", "trail");
  double spans = 0;
  for (int s = 0; s < kPersistentStages; ++s) {
    const PersistentStageTiming t = mean(static_cast<PersistentStage>(s));
    spans += t.span;
    out += strformat("%-18s", persistent_stage_name(s)) + " " + fixed(t.span) + " " +
           fixed(t.seen) + " " + fixed(t.inputs) + " " + fixed(t.compute) + " " + fixed(t.publish) +
           " " + fixed(t.trail) + "\n";
  }
  out += strformat("%-18s", "a layer") + " " + fixed(spans) + "\n";
  if (head_launches_ > 0) // once a launch, not a layer
    for (PersistentStage stage : {PersistentStage::head, PersistentStage::argmax}) {
      const PersistentStageTiming t = mean(stage);
      out += strformat("%-18s", persistent_stage_name(static_cast<int>(stage))) + " " +
             fixed(t.span) + " " + fixed(t.seen) + " " + fixed(t.inputs) + " " + fixed(t.compute) +
             " " + fixed(t.publish) + " " + fixed(t.trail) + "  (a launch)\n";
    }
  out += strformat("a launch: %.1f us from its first mark to its last signal\n",
                   mean_launch_ns() / 1000.0);
  out += "span: from the stage's inputs being complete (the last instruction it waits for "
         "signalled) to its own last signal; a layer's spans add up to its time.\n"
         "seen: the wait's end after the inputs were complete (or after the block took the "
         "instruction up, when later); inputs: staging the inputs and landing the weights "
         "(attention: norms and RoPE); compute: the rows or the attention; publish: the fence and "
         "the counter update. Medians over a stage's instructions.\n"
         "trail: how long after the median instruction the last one signalled.\n";
  out += strformat("timer: the finest nonzero step between two marks was %llu ns\n",
                   static_cast<unsigned long long>(finest_step_ns_));
  return out;
}

std::string persistent_trace_csv(std::span<const PersistentInstr> plan,
                                 std::span<const uint64_t> marks, int blocks) {
  check_sizes(plan, marks);
  uint64_t first = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < plan.size(); ++i)
    first = std::min(first, marks[i * kPersistentMarks]);
  std::string out = "instruction,block,layer,stage,range_begin,range_end,part,t_start,t_go,t_ready,"
                    "t_end,t_signal\n";
  for (size_t i = 0; i < plan.size(); ++i) {
    const PersistentInstr &instr = plan[i];
    out +=
        strformat("%zu,%zu,%d,%s,%d,%d,%d", i, i % static_cast<size_t>(std::max(blocks, 1)),
                  instr.layer, persistent_stage_name(instr.op), instr.begin, instr.end, instr.part);
    for (int k = 0; k < kPersistentMarks; ++k)
      out += strformat(",%llu",
                       static_cast<unsigned long long>(marks[i * kPersistentMarks + k] - first));
    out += "\n";
  }
  return out;
}

} // namespace bonsai::cuda

// Where a persistent decode launch's time went (common/persistent_trace):
// one layer's marks made up by hand, with every figure worked out by hand
// below them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bonsai/plugin/plugin_error.hpp"
#include "persistent_trace.hpp"

namespace {

using bonsai::cuda::persistent_stage_timings;
using bonsai::cuda::persistent_trace_csv;
using bonsai::cuda::PersistentInstr;
using bonsai::cuda::PersistentStage;
using bonsai::cuda::PersistentStageTiming;
using bonsai::cuda::PersistentTraceSummary;
using ::testing::HasSubstr;

PersistentInstr instr(PersistentStage stage, int begin, int end, int wait_counter,
                      int wait_target) {
  PersistentInstr i;
  i.op = static_cast<int32_t>(stage);
  i.layer = 0;
  i.begin = begin;
  i.end = end;
  i.wait_counter = wait_counter;
  i.wait_target = wait_target;
  i.signal_counter = static_cast<int32_t>(stage); // layer 0: counter = stage
  return i;
}

// One layer on two blocks: two Q/K/V instructions, two attention ranges
// (sequence 0, KV head 1), then one instruction of each later stage.
const std::vector<PersistentInstr> kPlan = {
    instr(PersistentStage::qkv, 0, 3, 0, 0),       instr(PersistentStage::qkv, 3, 6, 0, 0),
    instr(PersistentStage::attention, 0, 1, 0, 2), instr(PersistentStage::attention, 0, 1, 0, 2),
    instr(PersistentStage::output, 0, 4, 1, 2),    instr(PersistentStage::ffn_up, 0, 8, 2, 1),
    instr(PersistentStage::ffn_down, 0, 4, 3, 1),
};

// start, go, ready, end, signal of each instruction, in ns.
const std::vector<uint64_t> kMarks = {
    100, 110, 130, 170, 180, // Q/K/V
    105, 112, 140, 190, 200, //   its last signal (200) releases attention
    185, 210, 220, 260, 265, // attention, taken up before the release
    205, 215, 225, 245, 250, //   taken up after it
    270, 300, 310, 350, 360, // output projection, released at 265
    262, 370, 380, 400, 405, // gate/up, taken up long before its release at 360
    365, 410, 420, 440, 450, // down projection, released at 405
};

void expect_timing(const PersistentStageTiming &t, double span, double seen, double inputs,
                   double compute, double publish, double trail) {
  EXPECT_DOUBLE_EQ(t.span, span);
  EXPECT_DOUBLE_EQ(t.seen, seen);
  EXPECT_DOUBLE_EQ(t.inputs, inputs);
  EXPECT_DOUBLE_EQ(t.compute, compute);
  EXPECT_DOUBLE_EQ(t.publish, publish);
  EXPECT_DOUBLE_EQ(t.trail, trail);
}

TEST(PersistentTrace, EachStageSpanRunsFromItsReleaseToItsLastSignal) {
  const std::vector<PersistentStageTiming> t = persistent_stage_timings(kPlan, kMarks);
  ASSERT_EQ(t.size(), 10u); // the layer's five counters, then the LM head's (unused here)
  // Q/K/V: released at the first mark (100); seen 10 and 7, inputs 20 and
  // 28, compute 40 and 50, publish 10 and 10; signals 180 and 200.
  expect_timing(t[0], 100, 8.5, 24, 45, 10, 10);
  // Attention: released at 200; seen 210 - 200 and 215 - 205; signals 265, 250.
  expect_timing(t[1], 65, 10, 10, 30, 5, 7.5);
  expect_timing(t[2], 95, 30, 10, 40, 10, 0); // seen from its start (270)
  expect_timing(t[3], 45, 10, 10, 20, 5, 0);  // seen from its release (360)
  expect_timing(t[4], 45, 5, 10, 20, 10, 0);
  double spans = 0;
  for (const PersistentStageTiming &stage : t)
    spans += stage.span;
  EXPECT_DOUBLE_EQ(spans, 450 - 100); // the spans add up to the launch
}

// The layer above, then the LM head in two ranges (counter 5, released by
// the down projection's signal at 450) and the argmax (counter 6).
TEST(PersistentTrace, TheLmHeadAndTheArgmaxAreTimedOnceALaunch) {
  std::vector<PersistentInstr> plan = kPlan;
  std::vector<uint64_t> marks = kMarks;
  for (int range = 0; range < 2; ++range) {
    PersistentInstr head = instr(PersistentStage::head, 10 * range, 10 * range + 10, 4, 1);
    head.signal_counter = 5;
    head.part = range;
    plan.push_back(head);
  }
  PersistentInstr argmax = instr(PersistentStage::argmax, 0, 0, 5, 2);
  argmax.signal_counter = 6;
  plan.push_back(argmax);
  marks.insert(marks.end(), {
                                440, 455, 465, 485, 490, // head range 0
                                445, 460, 470, 500, 510, // head range 1: the last signal, 510
                                495, 515, 520, 530, 534, // argmax, released at 510
                            });
  const std::vector<PersistentStageTiming> t = persistent_stage_timings(plan, marks);
  ASSERT_EQ(t.size(), 10u);
  // Head: released at 450; seen 5 and 10, inputs 10 and 10, compute 20 and
  // 30, publish 5 and 10; signals 490 and 510.
  expect_timing(t[5], 60, 7.5, 10, 25, 7.5, 10);
  expect_timing(t[6], 24, 5, 5, 10, 4, 0); // seen from its release (510)
  // The summary, with the marks in microseconds so that its figures come out whole.
  for (uint64_t &mark : marks)
    mark *= 1000;
  PersistentTraceSummary summary;
  summary.add(plan, marks, 1);
  expect_timing(summary.mean(PersistentStage::head), 60000, 7500, 10000, 25000, 7500, 10000);
  // The layer's own stages are unchanged by the head after them.
  expect_timing(summary.mean(PersistentStage::ffn_down), 45000, 5000, 10000, 20000, 10000, 0);
  const std::string report = summary.report();
  EXPECT_THAT(report, HasSubstr("\na layer              350.00\n"));
  EXPECT_THAT(report, HasSubstr("\nLM head               60.00     7.50    10.00"
                                "    25.00     7.50    10.00  (a launch)\n"));
  EXPECT_THAT(report, HasSubstr("\nargmax                24.00     5.00     5.00"
                                "    10.00     4.00     0.00  (a launch)\n"));
  EXPECT_THAT(report, HasSubstr("a launch: 434.0 us")); // 100 to 534
}

TEST(PersistentTrace, TheSummaryAveragesLaunchesAndReportsTheTimerStep) {
  // The marks in microseconds rather than nanoseconds, so that the table's
  // figures come out whole.
  std::vector<uint64_t> first = kMarks;
  for (uint64_t &mark : first)
    mark *= 1000;
  // A second launch a second later whose output projection computes 20 us
  // longer: its end and signal, and every later instruction's marks, move.
  std::vector<uint64_t> second = first;
  for (size_t i = 0; i < second.size(); ++i)
    second[i] += 1000000000 + (i >= 4 * 5 + 3 ? 20000 : 0);
  PersistentTraceSummary summary;
  summary.add(kPlan, first, 1);
  summary.add(kPlan, second, 3);
  EXPECT_EQ(summary.launches(), 2);
  expect_timing(summary.mean(PersistentStage::qkv), 100000, 8500, 24000, 45000, 10000, 10000);
  expect_timing(summary.mean(PersistentStage::output), 105000, 30000, 10000, 50000, 10000, 0);
  expect_timing(summary.mean(PersistentStage::ffn_up), 45000, 10000, 10000, 20000, 5000, 0);
  EXPECT_DOUBLE_EQ(summary.mean_launch_ns(), 360000);
  const std::string report = summary.report();
  EXPECT_THAT(report, HasSubstr("2 launches of 1 to 3 tokens, 1 layers"));
  EXPECT_THAT(
      report,
      HasSubstr("\noutput projection    105.00    30.00    10.00    50.00    10.00     0.00\n"));
  EXPECT_THAT(report, HasSubstr("\na layer              360.00\n"));
  EXPECT_THAT(report, HasSubstr("a launch: 360.0 us"));
  EXPECT_THAT(report, HasSubstr("the finest nonzero step between two marks was 5000 ns"));
}

TEST(PersistentTrace, TheCsvHasALinePerInstructionFromTheFirstMark) {
  const std::string csv = persistent_trace_csv(kPlan, kMarks, 2);
  EXPECT_THAT(csv, HasSubstr("instruction,block,layer,stage,range_begin,range_end,part,t_start"));
  EXPECT_THAT(csv, HasSubstr("\n0,0,0,Q/K/V,0,3,0,0,10,30,70,80\n"));
  EXPECT_THAT(csv, HasSubstr("\n3,1,0,attention,0,1,0,105,115,125,145,150\n"));
  EXPECT_THAT(csv, HasSubstr("\n6,0,0,down projection,0,4,0,265,310,320,340,350\n"));
}

TEST(PersistentTrace, MarksThatDoNotFitThePlanAreRefused) {
  const std::vector<uint64_t> short_marks(kMarks.begin(), kMarks.end() - 1);
  EXPECT_THROW(persistent_stage_timings(kPlan, short_marks), bonsai::plugin::PluginError);
  EXPECT_THROW(persistent_trace_csv(kPlan, short_marks, 2), bonsai::plugin::PluginError);
  std::vector<PersistentInstr> bad = kPlan;
  bad[2].op = 9;
  EXPECT_THROW(persistent_stage_timings(bad, kMarks), bonsai::plugin::PluginError);
  EXPECT_THROW(persistent_stage_timings({}, {}), bonsai::plugin::PluginError);
}

} // namespace

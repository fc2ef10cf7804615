// The prefill pacer against hand-computed chunk sizes: it fits step time =
// fixed + per_token * tokens to the recent steps and sizes prompt chunks so a
// step stays within the budget times the decode-only step it predicts.
#include <gtest/gtest.h>

#include <cmath>

#include "schedule/prefill_pacer.hpp"

namespace {

using bonsai::server::PacerOptions;
using bonsai::server::PrefillPacer;

TEST(PrefillPacer, UntilStepsOfDifferentSizesAreSeenTheChunkIsTheMaximum) {
  PrefillPacer pacer(PacerOptions{64, 2.0});
  EXPECT_EQ(pacer.chunk(8), 64);
  pacer.record(100.0, 8, 0);
  pacer.record(110.0, 8, 0); // same size: the slope is not known
  EXPECT_EQ(pacer.chunk(8), 64);
}

TEST(PrefillPacer, TheChunkKeepsAStepWithinTheBudget) {
  // 8 tokens in 100 ms, 72 in 740 ms: 20 ms fixed + 10 ms a token, so a
  // decode step of 8 takes 100 ms and 10 prompt tokens double it.
  PrefillPacer pacer(PacerOptions{64, 2.0});
  pacer.record(100.0, 8, 0);
  pacer.record(740.0, 8, 64);
  EXPECT_EQ(pacer.chunk(8), 10);
  EXPECT_EQ(pacer.chunk(2), 4); // (20 + 20) / 10
  PrefillPacer looser(PacerOptions{64, 3.5});
  looser.record(100.0, 8, 0);
  looser.record(740.0, 8, 64);
  EXPECT_EQ(looser.chunk(8), 25); // floor(2.5 * 100 / 10)
}

TEST(PrefillPacer, TheFitFollowsMovingAveragesOfRecentSteps) {
  // Weights 1/4 for the newest: means of tokens 13, ms 175, tokens^2 244,
  // tokens*ms 3025 after (8, 100), (8, 200), (28, 325): slope 750 / 75 = 10,
  // fixed 175 - 130 = 45, decode step of 8 = 125 ms.
  PrefillPacer pacer(PacerOptions{64, 2.0});
  pacer.record(100.0, 8, 0);
  pacer.record(200.0, 8, 0);
  pacer.record(325.0, 8, 20);
  EXPECT_EQ(pacer.chunk(8), 12);
}

TEST(PrefillPacer, ALongRunOfEqualStepsKeepsTheLastFit) {
  PrefillPacer pacer(PacerOptions{64, 2.0});
  pacer.record(100.0, 8, 0);
  pacer.record(740.0, 8, 64);
  for (int i = 0; i < 200; ++i) // decoding only: the spread of sizes fades
    pacer.record(100.0, 8, 0);
  EXPECT_EQ(pacer.chunk(8), 10);
}

TEST(PrefillPacer, EveryPromptMovesAndTheMaximumHolds) {
  PrefillPacer slow(PacerOptions{64, 1.0}); // no room at all: still one token
  slow.record(100.0, 2, 0);
  slow.record(300.0, 2, 4);
  EXPECT_EQ(slow.chunk(2), 1);
  PrefillPacer cheap(PacerOptions{16, 2.0}); // tokens nearly free: capped
  cheap.record(100.0, 2, 0);
  cheap.record(101.0, 2, 10);
  EXPECT_EQ(cheap.chunk(2), 16);
  PrefillPacer faster(PacerOptions{16, 2.0}); // bigger steps were faster: no pacing
  faster.record(100.0, 2, 0);
  faster.record(90.0, 2, 10);
  EXPECT_EQ(faster.chunk(2), 16);
}

TEST(PrefillPacer, ZeroBudgetTurnsPacingOffAndBadSamplesAreIgnored) {
  PrefillPacer off(PacerOptions{32, 0.0});
  off.record(100.0, 8, 0);
  off.record(740.0, 8, 64);
  EXPECT_EQ(off.chunk(8), 32);
  PrefillPacer pacer(PacerOptions{64, 2.0});
  pacer.record(50.0, 0, 0); // an empty step
  pacer.record(-1.0, 4, 0); // a clock gone backwards
  pacer.record(std::nan(""), 4, 0);
  pacer.record(100.0, 8, 0);
  pacer.record(740.0, 8, 64);
  EXPECT_EQ(pacer.chunk(8), 10); // as if only the last two had been seen
}

} // namespace

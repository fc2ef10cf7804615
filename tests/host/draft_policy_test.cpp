// The adaptive draft length (host/src/generation/draft_policy.hpp), fed
// made-up step times so that every choice can be worked out by hand: the
// expected tokens of k proposals kept with probability p are
// E_k = 1 + p + ... + p^k, and the policy picks the k with the most E_k per
// millisecond, a plain step needing 5 % less (1.05 / plain).
#include <gtest/gtest.h>

#include "bonsai/engine.hpp"
#include "generation/draft_policy.hpp"

namespace {

using bonsai::DraftOptions;
using bonsai::host::DraftPolicy;

DraftOptions adaptive(int32_t max = 16) {
  DraftOptions options;
  options.max = max;
  options.min = 1;
  options.adaptive = true;
  return options;
}

// A policy after a plain step of 100 ms and its first try (four proposals,
// `kept` of them kept, in `ms` of which `one_off_ms` was a catch-up).
DraftPolicy after_first_try(int32_t kept, double ms, double one_off_ms = 0, int32_t max = 16) {
  DraftPolicy policy(adaptive(max));
  policy.plain_step(100);
  EXPECT_EQ(policy.length(max), 4);
  policy.verify_step(4, kept, ms, one_off_ms);
  return policy;
}

// Calls length(16) until it proposes; how many calls that took. The length
// proposed must be a retry's: two.
int calls_until_a_retry(DraftPolicy &policy) {
  for (int call = 1; call <= 2000; ++call)
    if (const int32_t length = policy.length(16); length > 0) {
      EXPECT_EQ(length, 2) << "call " << call;
      return call;
    }
  return -1;
}

TEST(DraftPolicy, WithoutAdaptingItProposesWhatIsOfferedBetweenMinAndMax) {
  DraftOptions options;
  options.max = 6;
  options.min = 2;
  options.adaptive = false;
  DraftPolicy policy(options);
  EXPECT_EQ(policy.length(10), 6);
  EXPECT_EQ(policy.length(3), 3);
  EXPECT_EQ(policy.length(1), 0); // below min: a plain step
}

TEST(DraftPolicy, ItMeasuresAPlainStepThenTriesFourProposals) {
  DraftPolicy policy(adaptive());
  EXPECT_EQ(policy.length(16), 0);
  policy.plain_step(100);
  EXPECT_EQ(policy.length(16), 4);
  EXPECT_EQ(policy.length(3), 3);
}

// Plain 100 ms; four proposals, all kept, in 260 ms of which 60 were the
// draft catching up. Kept share p = (0.9 * 1 + 4) / (0.9 * 2 + 4) = 0.8448.
// Cost per proposal (260 - 60 - 100) / 4 = 25, four measured at 200:
//   k = 3: E 3.1614 / 175 = 0.01807; k = 4: 3.6708 / 200 = 0.01835;
//   k = 5: 4.1011 / 225 = 0.01823: four.
// Counting the catch-up as the proposals' cost (40 each, four at 260):
//   k = 2: 2.5585 / 180 = 0.01421; k = 3: 3.1614 / 220 = 0.01437;
//   k = 4: 3.6708 / 260 = 0.01412: three.
TEST(DraftPolicy, ADraftCatchingUpIsNotChargedToItsProposals) {
  DraftPolicy policy = after_first_try(4, 260, 60);
  EXPECT_EQ(policy.length(16), 4);
  DraftPolicy charged = after_first_try(4, 260);
  EXPECT_EQ(charged.length(16), 3);
}

// Steps whose cost does not grow evenly (plain 100, two proposals 140, four
// 300). After four kept in 300 and two kept in 140: per proposal
// 0.9 * 50 + 0.1 * 20 = 47, p = (0.9 * 4.9 + 2) / (0.9 * 5.8 + 2) = 0.8878.
//   k = 1: 1.8878 / 147 = 0.01284; k = 2 (measured): 2.6760 / 140 = 0.01911;
//   k = 3: 3.3758 / 241 = 0.01401; k = 4 (measured): 3.9970 / 300 = 0.01332.
// Two; with every length estimated at 100 + 47 k it would be three
// (3.3758 / 241 = 0.01401 against 2.6760 / 194 = 0.01379).
TEST(DraftPolicy, EachLengthKeepsItsOwnMeasuredCost) {
  DraftPolicy policy = after_first_try(4, 300);
  policy.verify_step(2, 2, 140);
  EXPECT_EQ(policy.length(16), 2);
}

// Four proposals, none kept, in 300 ms: p = 0.9 / 2.8 = 0.32 and one
// proposal promises 1.32 / 150 = 0.0088 tokens a ms against 1.05 / 100:
// plain steps. A retry of two comes at the eighth; one that keeps nothing
// in 300 ms sets the next 300 / (0.05 * 100) = 60 plain steps later.
TEST(DraftPolicy, RetriesComeSoonThenSpacedByTheirCost) {
  DraftPolicy policy = after_first_try(0, 300);
  EXPECT_EQ(calls_until_a_retry(policy), 8);
  policy.verify_step(2, 0, 300);
  EXPECT_EQ(calls_until_a_retry(policy), 60);
}

// A draft that is asked and proposes nothing (a draft model below its
// p_min) costs its ask, and counts as a refused proposal: after plain 100
// and asks of 20 ms, p = 0.9 / 2.8 = 0.32 still promises 1.32 / 120 =
// 0.0110 against 1.05 / 100 = 0.0105, so it is asked once more; then
// p = 0.81 / 3.52 = 0.23: 1.23 / 120 = 0.0103, and it is not asked until the
// retry eight plain steps later. Its asks leave the verified steps' costs
// alone: lengths stay estimated, never measured at 20 ms.
TEST(DraftPolicy, ADraftThatProposesNothingIsAskedLessAndLess) {
  DraftPolicy policy(adaptive());
  policy.plain_step(100);
  ASSERT_EQ(policy.length(16), 4);
  policy.nothing_proposed(20);
  EXPECT_EQ(policy.length(16), 1);
  policy.nothing_proposed(20);
  EXPECT_EQ(calls_until_a_retry(policy), 8);
}

// Lengths past the ones measured apart (up to 200 here) are estimated, not
// read past the end: plain 100, four kept in 120 (5 a proposal), p = 0.8448,
// E_k = (1 - p^(k+1)) / (1 - p): k = 9: 5.2479 / 145 = 0.03619, k = 10:
// 5.4367 / 150 = 0.03624, k = 11: 5.5930 / 155 = 0.03608. Ten.
TEST(DraftPolicy, LengthsPastTheMeasuredOnesAreEstimated) {
  DraftPolicy wide = after_first_try(4, 120, 0, 200);
  EXPECT_EQ(wide.length(200), 10);
}

} // namespace

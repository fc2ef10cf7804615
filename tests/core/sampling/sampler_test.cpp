// Sampling pipeline: filters never let through what they must exclude, the
// draw matches hand-computed distributions, and seeds make it reproducible.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Only the stages a test names are on.
SamplerParams plain(float temperature, uint64_t seed) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<float> log_probs(const std::vector<double> &probs) {
  std::vector<float> logits;
  for (double p : probs)
    logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

std::vector<int> histogram(Sampler &sampler, const std::vector<float> &logits, int draws) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i)
    ++counts[static_cast<size_t>(sampler.sample(logits))];
  return counts;
}

double chi_square(const std::vector<int> &counts, const std::vector<double> &expected_probs,
                  int draws) {
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = expected_probs[i] * draws;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

// 99.9% quantile of chi-square with 2 degrees of freedom: -2 ln(0.001).
constexpr double kChi2Dof2Limit = 13.8155;

TEST(Sampler, GreedyIsArgmax) {
  std::mt19937 gen(123);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Sampler sampler(plain(0.0f, 1));
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> logits(5000);
    for (float &x : logits)
      x = normal(gen);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sampler.sample(logits), best);
  }
  const std::vector<float> tie = {0.0f, 2.0f, 2.0f};
  EXPECT_EQ(sampler.sample(tie), 1);
}

TEST(Sampler, MatchesAHandBuiltDistribution) {
  const std::vector<double> probs = {0.2, 0.3, 0.5};
  Sampler sampler(plain(1.0f, 42));
  constexpr int kDraws = 10000;
  const auto counts = histogram(sampler, log_probs(probs), kDraws);
  EXPECT_LT(chi_square(counts, probs, kDraws), kChi2Dof2Limit)
      << counts[0] << " " << counts[1] << " " << counts[2];
}

TEST(Sampler, TemperatureFlattensTheDistribution) {
  // T = 2: p_i^(1/2) normalised = (0.4472, 0.5477, 0.7071) / 1.7020.
  const std::vector<double> expected = {0.26275, 0.32180, 0.41545};
  Sampler sampler(plain(2.0f, 9));
  constexpr int kDraws = 10000;
  const auto counts = histogram(sampler, log_probs({0.2, 0.3, 0.5}), kDraws);
  EXPECT_LT(chi_square(counts, expected, kDraws), kChi2Dof2Limit)
      << counts[0] << " " << counts[1] << " " << counts[2];
}

TEST(Sampler, LowTemperatureApproachesGreedy) {
  const std::vector<float> logits = {0.5f, 1.0f, 0.9f};
  constexpr int kDraws = 2000;
  int previous_best = -1;
  for (float temperature : {1.0f, 0.1f, 0.01f}) {
    Sampler sampler(plain(temperature, 5));
    const int best = histogram(sampler, logits, kDraws)[1];
    EXPECT_GT(best, previous_best) << "temperature " << temperature;
    previous_best = best;
  }
  // exp(-0.1 / 0.001) = e^-100: the runner-up is never drawn.
  Sampler cold(plain(0.001f, 5));
  EXPECT_EQ(histogram(cold, logits, kDraws)[1], kDraws);
  // A denormal temperature (1 / T overflows) still behaves like greedy.
  Sampler frozen(plain(1e-40f, 5));
  EXPECT_EQ(histogram(frozen, logits, kDraws)[1], kDraws);
}

TEST(Sampler, TopKNeverLeavesTheKBest) {
  std::mt19937 gen(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(1000);
  for (float &x : logits)
    x = normal(gen);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const std::set<int32_t> best5(order.begin(), order.begin() + 5);

  SamplerParams p = plain(5.0f, 3); // hot, so the filter does all the work
  p.top_k = 5;
  Sampler sampler(p);
  std::set<int32_t> seen;
  for (int i = 0; i < 3000; ++i) {
    const int32_t token = sampler.sample(logits);
    ASSERT_TRUE(best5.count(token)) << "token " << token << " is not among the 5 best";
    seen.insert(token);
  }
  EXPECT_EQ(seen, best5); // and every one of the 5 is reachable
}

TEST(Sampler, TopKBreaksTiesByLowestId) {
  SamplerParams p = plain(1.0f, 11);
  p.top_k = 3;
  Sampler sampler(p);
  const std::vector<float> flat(50, 0.25f);
  std::set<int32_t> seen;
  for (int i = 0; i < 500; ++i)
    seen.insert(sampler.sample(flat));
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
}

// Five real tokens at scattered ids of a 1000-token vocabulary; the rest are
// practically impossible (logit -40).
std::vector<float> scattered(const std::map<int32_t, double> &probs) {
  std::vector<float> logits(1000, -40.0f);
  for (const auto &[id, p] : probs)
    logits[static_cast<size_t>(id)] = static_cast<float>(std::log(p));
  return logits;
}

TEST(Sampler, TopPNeverLeavesTheNucleus) {
  // Best first: 0.5 (id 700), 0.2 (id 3), 0.15 (id 999), 0.1 (id 0), 0.05 (id 500).
  // 0.5 + 0.2 = 0.7 < 0.8 <= 0.85: the nucleus is {700, 3, 999}.
  const auto logits = scattered({{700, 0.5}, {3, 0.2}, {999, 0.15}, {0, 0.1}, {500, 0.05}});
  for (int32_t top_k : {0, 40}) { // unsorted and already-sorted paths
    SamplerParams p = plain(1.0f, 21);
    p.top_p = 0.8f;
    p.top_k = top_k;
    Sampler sampler(p);
    std::set<int32_t> seen;
    for (int i = 0; i < 5000; ++i) {
      const int32_t token = sampler.sample(logits);
      ASSERT_TRUE(token == 700 || token == 3 || token == 999) << "token " << token;
      seen.insert(token);
    }
    EXPECT_EQ(seen.size(), 3u) << "top_k " << top_k;
  }
}

TEST(Sampler, TopPRenormalisesTheNucleus) {
  // Nucleus {0.5, 0.3} of {0.5, 0.3, 0.2} at top_p 0.75: draws split 5:3.
  SamplerParams p = plain(1.0f, 8);
  p.top_p = 0.75f;
  Sampler sampler(p);
  constexpr int kDraws = 10000;
  const auto counts = histogram(sampler, log_probs({0.5, 0.3, 0.2}), kDraws);
  EXPECT_EQ(counts[2], 0);
  const double expected = kDraws * 0.625;
  // 4.5 standard deviations of a binomial(10000, 0.625): about 218.
  EXPECT_NEAR(counts[0], expected, 218.0);
}

TEST(Sampler, TopPOnAFlatDistributionKeepsTheLowestIds) {
  // 200 equal tokens, p = 0.005 each: reaching 0.5025 takes 101 of them,
  // more than the first sorted chunk, ties going to the lowest ids.
  SamplerParams p = plain(1.0f, 4);
  p.top_p = 0.5025f;
  Sampler sampler(p);
  const std::vector<float> flat(200, 1.0f);
  int32_t highest = -1;
  for (int i = 0; i < 4000; ++i)
    highest = std::max(highest, sampler.sample(flat));
  EXPECT_EQ(highest, 100);
}

TEST(Sampler, TopPZeroKeepsOnlyTheBest) {
  SamplerParams p = plain(1.0f, 4);
  p.top_p = 0.0f;
  Sampler sampler(p);
  const auto counts = histogram(sampler, log_probs({0.3, 0.4, 0.3}), 500);
  EXPECT_EQ(counts[1], 500);
}

TEST(Sampler, MinPExcludesTokensBelowTheThreshold) {
  // p_max = 0.4, min_p = 0.3 -> threshold 0.12: 0.1 and 0.05 go, 0.15 stays.
  const auto logits = scattered({{10, 0.4}, {20, 0.3}, {30, 0.15}, {40, 0.1}, {50, 0.05}});
  SamplerParams p = plain(1.0f, 13);
  p.min_p = 0.3f;
  Sampler sampler(p);
  std::set<int32_t> seen;
  for (int i = 0; i < 5000; ++i) {
    const int32_t token = sampler.sample(logits);
    ASSERT_TRUE(token == 10 || token == 20 || token == 30) << "token " << token;
    seen.insert(token);
  }
  EXPECT_EQ(seen.size(), 3u);
}

TEST(Sampler, DefaultChainStaysInsideEveryFilter) {
  // Defaults: top_k 40, top_p 0.95, min_p 0.05, T 0.8 on a 151,936-token vocabulary.
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(151936);
  for (float &x : logits)
    x = normal(gen);
  const float best = *std::max_element(logits.begin(), logits.end());
  std::vector<float> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + 39, sorted.end(), std::greater<float>());
  const float fortieth = sorted[39];
  SamplerParams p;
  p.seed = 99;
  Sampler sampler(p);
  for (int i = 0; i < 200; ++i) {
    const float chosen = logits[static_cast<size_t>(sampler.sample(logits))];
    ASSERT_GE(chosen, fortieth);
    // min-p at T 0.8: p / p_max = exp((l - l_max) / 0.8) >= 0.05
    ASSERT_GE(std::exp((chosen - best) / 0.8f), 0.05f * 0.9999f);
  }
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferent) {
  const std::vector<float> logits(64, 0.0f); // uniform: 6 bits of entropy per draw
  const auto run = [&](uint64_t seed) {
    Sampler sampler(plain(1.0f, seed));
    std::vector<int32_t> tokens;
    for (int i = 0; i < 50; ++i)
      tokens.push_back(sampler.sample(logits));
    return tokens;
  };
  EXPECT_EQ(run(1234), run(1234));
  EXPECT_NE(run(1234), run(1235));

  Sampler sampler(plain(1.0f, 1234));
  const auto first = run(1234);
  for (int i = 0; i < 10; ++i)
    sampler.sample(logits);
  sampler.reset(); // reseeds: the sequence starts over
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(sampler.sample(logits), first[static_cast<size_t>(i)]);
}

TEST(Sampler, NanAndInfiniteLogits) {
  Sampler sampler(plain(1.0f, 2));
  const std::vector<float> with_nan = {std::nanf(""), 1.0f, std::nanf("")};
  const std::vector<float> with_inf = {0.0f, kInf, 1.0f};
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(sampler.sample(with_nan), 1);
    EXPECT_EQ(sampler.sample(with_inf), 1);
  }
  const std::vector<float> impossible = {-kInf, std::nanf("")};
  EXPECT_THROW(sampler.sample(impossible), Error);
  EXPECT_THROW(sampler.sample(std::span<const float>{}), Error);
}

} // namespace
} // namespace bonsai

// Penalties: exact values computed by hand, the window, and their place in
// the pipeline (before top-k).
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {
namespace {

TEST(Penalties, HandComputedValues) {
  SamplerParams p;
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  p.presence_penalty = 0.5f;
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 4.0f, 0.0f};
  const std::vector<int32_t> recent = {3, 0, 1, 3, 1, 3, 4};
  apply_penalties(p, recent, logits);
  EXPECT_FLOAT_EQ(logits[0], 0.25f);  // 2 / 2 - 1 * 0.25 - 0.5
  EXPECT_FLOAT_EQ(logits[1], -3.0f);  // -1 * 2 - 2 * 0.25 - 0.5
  EXPECT_FLOAT_EQ(logits[2], 0.5f);   // not in the window
  EXPECT_FLOAT_EQ(logits[3], 0.75f);  // 4 / 2 - 3 * 0.25 - 0.5
  EXPECT_FLOAT_EQ(logits[4], -0.75f); // 0 * 2 - 0.25 - 0.5 (zero takes the multiply branch)
}

TEST(Penalties, RejectTokensOutsideTheLogits) {
  SamplerParams p;
  p.repeat_penalty = 1.1f;
  std::vector<float> logits(4, 0.0f);
  const std::vector<int32_t> recent = {4};
  EXPECT_THROW(apply_penalties(p, recent, logits), Error);
  const std::vector<int32_t> negative = {-1};
  EXPECT_THROW(apply_penalties(p, negative, logits), Error);
}

SamplerParams greedy_with_repeat_penalty(float penalty, int32_t last_n) {
  SamplerParams p;
  p.temperature = 0.0f;
  p.repeat_penalty = penalty;
  p.repeat_last_n = last_n;
  return p;
}

TEST(Penalties, SamplerAppliesThemToGreedy) {
  Sampler sampler(greedy_with_repeat_penalty(2.0f, 64));
  const std::vector<float> positive = {2.0f, 1.5f, -1.0f};
  EXPECT_EQ(sampler.sample(positive), 0);
  sampler.accept(0); // 2.0 -> 1.0 < 1.5
  EXPECT_EQ(sampler.sample(positive), 1);

  Sampler negative_sampler(greedy_with_repeat_penalty(2.0f, 64));
  const std::vector<float> negative = {-1.0f, -1.5f};
  negative_sampler.accept(0); // -1.0 -> -2.0 < -1.5
  EXPECT_EQ(negative_sampler.sample(negative), 1);
}

TEST(Penalties, OnlyTheLastNTokensCount) {
  Sampler sampler(greedy_with_repeat_penalty(2.0f, 2));
  const std::vector<float> logits = {1.0f, 0.9f, 0.8f};
  sampler.accept(0);
  EXPECT_EQ(sampler.sample(logits), 1); // 0 penalized to 0.5
  sampler.accept(1);
  sampler.accept(2); // window is now {1, 2}: token 0 is free again
  EXPECT_EQ(sampler.sample(logits), 0);
  sampler.reset(); // forgets the window
  sampler.accept(2);
  EXPECT_EQ(sampler.sample(logits), 0);
}

TEST(Penalties, ZeroWindowTurnsThemOff) {
  Sampler sampler(greedy_with_repeat_penalty(2.0f, 0));
  const std::vector<float> logits = {1.0f, 0.9f};
  sampler.accept(0);
  EXPECT_EQ(sampler.sample(logits), 0);
}

TEST(Penalties, ComeBeforeTopK) {
  SamplerParams p;
  p.top_k = 1;
  p.repeat_penalty = 10.0f;
  p.seed = 7;
  Sampler sampler(p);
  const std::vector<float> logits = {5.0f, 4.0f, 3.0f};
  sampler.accept(0); // 5 -> 0.5: the single best is now token 1
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(sampler.sample(logits), 1);
}

TEST(Penalties, AcceptedTokenOutsideVocabularyIsAnError) {
  Sampler sampler(greedy_with_repeat_penalty(1.5f, 8));
  sampler.accept(10);
  const std::vector<float> logits(4, 0.0f);
  EXPECT_THROW(sampler.sample(logits), Error);
  EXPECT_THROW(sampler.accept(-1), Error);
}

} // namespace
} // namespace bonsai

// GenerateRequest::reasoning_budget in Session::generate, on the scripted
// fake plugin (its model replies "<think>Plan it</think>\n\nSure thing"):
// after the budget's tokens inside the block, </think> is taken instead of
// the model's choice, with greedy (the plugin's argmax) and sampled decoding.
#include <gtest/gtest.h>

#include <cstdlib>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

constexpr int32_t kThink = 2003, kEndThink = 2004;

std::vector<int32_t> reply(int32_t budget, float temperature) {
  const bonsai::Engine engine = scripted_engine();
  auto session = scripted_session(engine, "2003,47,75,276,432,2004,271,50,552,270,287,2002");
  bonsai::GenerateRequest request;
  request.prompt_tokens = {100, 101, 102};
  request.n_predict = 8;
  request.sampling.temperature = temperature;
  request.sampling.top_k = 1; // sampled, but the script's token is the only candidate
  request.reasoning_budget = budget;
  return session.generate(request).tokens;
}

TEST(ThinkBudget, TheBlockClosesAfterTheBudget) {
  for (float temperature : {0.0f, 0.7f}) {
    const auto two = reply(2, temperature);
    ASSERT_GE(two.size(), 4u);
    EXPECT_EQ(std::vector<int32_t>(two.begin(), two.begin() + 4),
              (std::vector<int32_t>{kThink, 47, 75, kEndThink}))
        << "temperature " << temperature;
    const auto zero = reply(0, temperature);
    EXPECT_EQ(std::vector<int32_t>(zero.begin(), zero.begin() + 2),
              (std::vector<int32_t>{kThink, kEndThink}));
  }
}

TEST(ThinkBudget, NoBudgetLeavesTheReplyAlone) {
  EXPECT_EQ(reply(-1, 0.0f), (std::vector<int32_t>{kThink, 47, 75, 276, 432, kEndThink, 271, 50}));
}

TEST(ThinkBudget, ABudgetBelowMinusOneIsRefused) {
  const bonsai::Engine engine = scripted_engine();
  auto session = scripted_session(engine, "2003,2004");
  bonsai::GenerateRequest request;
  request.prompt_tokens = {100};
  request.reasoning_budget = -2;
  EXPECT_THROW(session.generate(request), bonsai::InvalidArgument);
}

} // namespace

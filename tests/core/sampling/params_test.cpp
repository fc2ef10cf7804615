// Parameter validation and argmax.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Expects validate() to throw an error whose message names `field`.
void expect_rejected(const SamplerParams &p, const std::string &field) {
  try {
    p.validate();
    ADD_FAILURE() << "no error for an invalid " << field;
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
  EXPECT_THROW(Sampler{p}, Error);
}

TEST(SamplerParams, DefaultsAreValid) {
  EXPECT_NO_THROW(SamplerParams{}.validate());
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  greedy.top_k = -5;   // off
  greedy.top_p = 1.0f; // off
  greedy.min_p = 0.0f; // off
  greedy.repeat_last_n = 0;
  greedy.presence_penalty = -1.5f; // negative penalties are allowed (they encourage)
  EXPECT_NO_THROW(greedy.validate());
  EXPECT_TRUE(greedy.greedy());
}

TEST(SamplerParams, RejectsInvalidValues) {
  const auto with = [](auto change) {
    SamplerParams p;
    change(p);
    return p;
  };
  expect_rejected(with([](SamplerParams &p) { p.top_p = -0.1f; }), "top_p");
  expect_rejected(with([](SamplerParams &p) { p.top_p = 1.01f; }), "top_p");
  expect_rejected(with([](SamplerParams &p) { p.top_p = kNan; }), "top_p");
  expect_rejected(with([](SamplerParams &p) { p.min_p = -0.01f; }), "min_p");
  expect_rejected(with([](SamplerParams &p) { p.min_p = 1.5f; }), "min_p");
  expect_rejected(with([](SamplerParams &p) { p.min_p = kNan; }), "min_p");
  expect_rejected(with([](SamplerParams &p) { p.repeat_penalty = 0.0f; }), "repeat_penalty");
  expect_rejected(with([](SamplerParams &p) { p.repeat_penalty = -1.0f; }), "repeat_penalty");
  expect_rejected(with([](SamplerParams &p) { p.repeat_penalty = kNan; }), "repeat_penalty");
  expect_rejected(with([](SamplerParams &p) { p.temperature = kNan; }), "temperature");
  expect_rejected(with([](SamplerParams &p) { p.temperature = kInf; }), "temperature");
  expect_rejected(with([](SamplerParams &p) { p.repeat_last_n = -1; }), "repeat_last_n");
  expect_rejected(with([](SamplerParams &p) { p.presence_penalty = kInf; }), "presence_penalty");
  expect_rejected(with([](SamplerParams &p) { p.frequency_penalty = kNan; }), "frequency_penalty");
}

TEST(Argmax, LowestIndexWinsTies) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(argmax(logits), 1);
  const std::vector<float> negative = {-5.0f, -2.0f, -2.0f, -7.0f};
  EXPECT_EQ(argmax(negative), 1);
  const std::vector<float> all_minus_inf = {-kInf, -kInf};
  EXPECT_EQ(argmax(all_minus_inf), 0);
}

TEST(Argmax, NanNeverWins) {
  const std::vector<float> logits = {kNan, -1.0f, kNan, -3.0f};
  EXPECT_EQ(argmax(logits), 1);
  const std::vector<float> last = {kNan, kNan, 0.5f};
  EXPECT_EQ(argmax(last), 2);
}

TEST(Argmax, RejectsEmptyAndAllNan) {
  EXPECT_THROW(argmax(std::span<const float>{}), Error);
  const std::vector<float> nans = {kNan, kNan};
  EXPECT_THROW(argmax(nans), Error);
}

} // namespace
} // namespace bonsai

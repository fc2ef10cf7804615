// What a drafted greedy reply asks of the backend's LM head, on the scripted
// fake plugin (its model replies a fixed token list; with
// $BONSAI_FAKE_LM_HEAD_LOG it notes every LM head call): steps that verify
// nothing take the argmax on the device, as plain greedy decoding does, so
// a draft that proposes nothing costs no logits copied back; only a verify
// step copies rows, one per token it checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

struct LmHeadCall {
  bool logits; // rows copied back (else only the argmax)
  int n_outputs;
};

struct DraftedReply {
  std::vector<int32_t> tokens;
  std::vector<LmHeadCall> calls; // the reply's, the prompt's step first
};

// A greedy reply of 8 tokens to `prompt` with prompt lookup (two-token
// n-grams, fixed length 4) on a model that replies `script`.
DraftedReply drafted_reply(const std::vector<int32_t> &prompt, const char *script) {
  const std::filesystem::path log = std::filesystem::temp_directory_path() /
                                    ("bonsai-lm-head-" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(log);
  const bonsai::Engine engine = scripted_engine();
  setenv("BONSAI_FAKE_LM_HEAD_LOG", log.c_str(), 1); // read with the script
  auto session = scripted_session(engine, script);
  unsetenv("BONSAI_FAKE_LM_HEAD_LOG");
  bonsai::GenerateRequest request;
  request.prompt_tokens = prompt;
  request.n_predict = 8;
  request.sampling.temperature = 0.0f;
  request.draft.ngram = 2;
  request.draft.max = 4;
  request.draft.adaptive = false;
  DraftedReply reply;
  reply.tokens = session.generate(request).tokens;
  std::ifstream in(log);
  std::string kind;
  int n = 0;
  while (in >> kind >> n)
    reply.calls.push_back({kind == "logits", n});
  std::filesystem::remove(log);
  return reply;
}

TEST(DraftSteps, ADraftThatProposesNothingCopiesNoLogits) {
  // No two-token sequence of the context comes back: nothing to propose.
  const DraftedReply reply = drafted_reply({100, 101, 102}, "300,301,302,303,304,305,306,307");
  EXPECT_EQ(reply.tokens, (std::vector<int32_t>{300, 301, 302, 303, 304, 305, 306, 307}));
  // The prompt's step and seven plain steps (the eighth token needs none).
  ASSERT_EQ(reply.calls.size(), 8u);
  for (const LmHeadCall &call : reply.calls) {
    EXPECT_FALSE(call.logits);
    EXPECT_EQ(call.n_outputs, 1);
  }
}

TEST(DraftSteps, OnlyVerifyStepsCopyARowPerTokenChecked) {
  // The reply repeats itself: once "300,301" comes back, the lookup
  // proposes what followed it the first time, and the model agrees.
  const DraftedReply reply = drafted_reply({100, 101, 102}, "300,301,302,300,301,302,300,301");
  EXPECT_EQ(reply.tokens, (std::vector<int32_t>{300, 301, 302, 300, 301, 302, 300, 301}));
  int verify_steps = 0;
  for (const LmHeadCall &call : reply.calls) {
    if (call.logits) {
      ++verify_steps;
      EXPECT_GE(call.n_outputs, 2); // the step's token and at least one proposal
    } else {
      EXPECT_EQ(call.n_outputs, 1);
    }
  }
  EXPECT_GE(verify_steps, 1);
  EXPECT_FALSE(reply.calls.front().logits); // the prompt's step
}

} // namespace

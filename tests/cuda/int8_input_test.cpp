// The decode input of the int8 GEMVs quantized once per token
// (int8_input=token, the default) or by every GEMV block (int8_input=block),
// through the host on the fake driver: both follow the float64 reference's
// greedy continuation of tiny-q1, and since both round the same row the
// same way, their decode logits are the same bits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "cuda_test_support.hpp"
#include "fake_driver_support.hpp"
#include "tiny_q1_greedy.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;

struct Decoded {
  std::vector<int32_t> tokens;
  std::vector<float> logits; // every decode step's, one after another
};

Decoded decode_with(const std::string &options) {
  const bonsai::Engine engine = open_tiny_q1_cuda(options);
  bonsai::Session session = engine.create_session();
  Decoded out;
  out.tokens.push_back(session.eval_argmax(kTinyQ1Prompt));
  while (out.tokens.size() < kTinyQ1Greedy.size()) {
    // Single-token steps: the int8 GEMVs' path.
    const std::vector<float> logits = session.decode_step(out.tokens.back());
    out.logits.insert(out.logits.end(), logits.begin(), logits.end());
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best])
        best = i;
    out.tokens.push_back(static_cast<int32_t>(best));
  }
  return out;
}

TEST(CudaInt8Input, OncePerTokenAndPerBlockFollowTheReferenceWithTheSameLogits) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const Decoded per_token = decode_with("int8_input=token");
  const Decoded per_block = decode_with("int8_input=block");
  EXPECT_EQ(per_token.tokens, kTinyQ1Greedy);
  EXPECT_EQ(per_block.tokens, kTinyQ1Greedy);
  ASSERT_EQ(per_token.logits.size(), per_block.logits.size());
  ASSERT_FALSE(per_token.logits.empty());
  for (size_t i = 0; i < per_token.logits.size(); ++i)
    ASSERT_EQ(per_token.logits[i], per_block.logits[i]) << "logit " << i;
}

} // namespace

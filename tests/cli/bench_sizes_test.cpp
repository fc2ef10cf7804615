// bonsai bench sizes its engine to the tests: every step a test takes must
// fit the step size, or the engine splits it (a drafted verify split into
// single tokens costs what decoding them one by one does, which is what the
// gen+draft rows measured before the draft counted here).
#include <gtest/gtest.h>

#include "bench_sizes.hpp"

namespace bonsai::cli {
namespace {

TEST(BenchSizes, ADraftedStepFitsWhenNoPromptTestRuns) {
  // -p 0 -n 128 --draft-max 4: the verify step is the token and 4 proposals.
  const BenchSizes s = bench_sizes({0, 128, 0, 1, 4});
  EXPECT_EQ(s.n_batch, 5);
  EXPECT_EQ(s.n_ctx, 128 + 5);
  // Without a draft a decode-only run needs steps of one token.
  const BenchSizes plain = bench_sizes({0, 128, 0, 1, 0});
  EXPECT_EQ(plain.n_batch, 1);
  EXPECT_EQ(plain.n_ctx, 128);
}

TEST(BenchSizes, PromptsParallelStepsAndDepthSetTheRest) {
  // -p 512 -np 8: 4096 tokens fit one step.
  EXPECT_EQ(bench_sizes({512, 128, 0, 8, 0}).n_batch, 4096);
  // -p 4096 -np 4: chunks of 4096.
  EXPECT_EQ(bench_sizes({4096, 0, 0, 4, 0}).n_batch, 4096);
  // -p 0 -n 16 -np 8 -d 4096: the depth prefilled 512 at a time; the
  // context holds the depth and the longest test.
  const BenchSizes deep = bench_sizes({0, 16, 4096, 8, 0});
  EXPECT_EQ(deep.n_batch, 512);
  EXPECT_EQ(deep.n_ctx, 4096 + 16);
  // -n 4 -np 8: a step of 8 sequences carries 8 tokens.
  const BenchSizes wide = bench_sizes({0, 4, 0, 8, 0});
  EXPECT_EQ(wide.n_batch, 8);
  EXPECT_EQ(wide.n_ctx, 8);
}

} // namespace
} // namespace bonsai::cli

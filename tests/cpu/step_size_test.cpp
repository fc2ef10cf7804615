// A token's matmul result must not depend on the step it is in: the
// speculative verify step and a batch of sequences give each token the
// logits it would get alone. The fast sets take a step's tokens in tiles and
// order their passes by the step's size (the AVX-512 set reads each group
// of rows once for all the tokens of a small step, and tile by tile over
// all the rows for a large one), so every row kernel of every set this CPU
// runs is checked at sizes on either side of those choices, bit for bit
// against each token's single-token result.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "kernel_test_support.hpp"
#include "kernels/kernel_set.hpp"
#include "random_blocks.hpp"

namespace {

using namespace bonsai::cpu;
using namespace bonsai::cpu::test;
using bonsai::GgmlType;

// Every fast set this CPU runs (the reference set takes float inputs, row
// by row).
std::vector<const KernelSet *> fast_sets() {
  const CpuFeatures &cpu = cpu_features();
  return runnable_sets({{avx2_kernel_set(), cpu.has_avx2_set()},
                        {avxvnni_kernel_set(), cpu.has_avxvnni_set()},
                        {avx512_kernel_set(), cpu.has_avx512_set()},
                        {neon_kernel_set(), cpu.has_neon_set()},
                        {dotprod_kernel_set(), cpu.has_dotprod_set()},
                        {i8mm_kernel_set(), cpu.has_i8mm_set()}},
                       [](const KernelSet &) { return true; });
}

TEST(StepSize, EveryTokenGetsItsSingleTokenRowsInStepsOfAnySize) {
  // 37 rows: groups of 4 and an odd row left; 1,024 inputs: 8 blocks.
  const int64_t rows = 37, cols = 1024, blocks = cols / kActBlock;
  const int kMaxTokens = 20;
  const std::vector<float> x = random_inputs(kMaxTokens * cols, 11);
  struct Type {
    GgmlType type;
    WeightKind kind;
    size_t block_bytes;
    int per_block; // weight blocks per 128 inputs
  };
  for (const KernelSet *set : fast_sets())
    for (const Type t : {Type{GgmlType::Q1_0, WeightKind::Q1_0, 18, 1},
                         Type{GgmlType::Q2_0, WeightKind::Q2_0, 34, 1},
                         Type{GgmlType::Q2_0_G64, WeightKind::Q2_0_G64, 18, 2},
                         Type{GgmlType::Q8_0, WeightKind::Q8_0, 34, 4}}) {
      if (set->rows[static_cast<int>(t.kind)] == nullptr ||
          !set->quantized_input[static_cast<int>(t.kind)])
        continue;
      SCOPED_TRACE(std::string(set->name) + ", type " + std::to_string(static_cast<int>(t.type)));
      const size_t row_bytes = t.block_bytes * static_cast<size_t>(t.per_block * blocks);
      const std::vector<uint8_t> w = random_rows(t.block_bytes, rows, t.per_block * blocks, 4);
      std::vector<std::vector<float>> alone(kMaxTokens);
      for (int token = 0; token < kMaxTokens; ++token) {
        const std::vector<float> xt(x.begin() + token * cols, x.begin() + (token + 1) * cols);
        alone[static_cast<size_t>(token)] =
            rows_of(*set, t.type, t.kind, w, row_bytes, rows, cols, xt, 1);
      }
      double magnitude = 0;
      for (const float v : alone[0])
        magnitude += std::abs(v);
      EXPECT_GT(magnitude, 0.0); // real sums, not zeros on both sides
      for (const int n_tokens : {2, 3, 4, 5, 7, 8, 9, 16, 17, kMaxTokens}) {
        const std::vector<float> y =
            rows_of(*set, t.type, t.kind, w, row_bytes, rows, cols, x, n_tokens);
        for (int token = 0; token < n_tokens; ++token)
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(y[static_cast<size_t>(token * rows + r)],
                      alone[static_cast<size_t>(token)][static_cast<size_t>(r)])
                << "step of " << n_tokens << ", token " << token << ", row " << r;
      }
    }
}

} // namespace

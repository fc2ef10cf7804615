// The AArch64 kernel sets (neon, dotprod, i8mm; plugins/cpu/src/kernels/
// arm_sets.cpp): each row kernel against a float64 dot of the quantized
// inputs, the float rows against float64, the dotprod and i8mm kernels bit
// for bit against the ARMv8.0 ones (their int32 sums are the same), and on
// every architecture: a set built for the other one is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "activations.hpp"
#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "kernel_test_support.hpp"
#include "kernels/kernel_set.hpp"
#include "q1_tiles.hpp"
#include "random_blocks.hpp"

namespace {

using namespace bonsai::cpu;
using namespace bonsai::cpu::test;
using bonsai::GgmlType;

// The message of the UNSUPPORTED refusal of `choice`, or "" if accepted.
std::string refusal(KernelChoice choice) {
  try {
    select_kernel_set(choice, cpu_features());
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

TEST(ArmSets, ASetOfTheOtherArchitectureIsRefusedByName) {
#if defined(__aarch64__)
  for (const KernelChoice x86 : {KernelChoice::Avx2, KernelChoice::AvxVnni, KernelChoice::Avx512}) {
    const std::string error = refusal(x86);
    EXPECT_NE(error.find("is an x86-64 kernel set"), std::string::npos) << error;
    EXPECT_NE(error.find("built for aarch64"), std::string::npos) << error;
    EXPECT_NE(error.find("reference, neon, dotprod, i8mm"), std::string::npos) << error;
  }
#elif defined(__x86_64__)
  for (const KernelChoice arm : {KernelChoice::Neon, KernelChoice::DotProd, KernelChoice::I8mm}) {
    const std::string error = refusal(arm);
    EXPECT_NE(error.find("is an AArch64 kernel set"), std::string::npos) << error;
    EXPECT_NE(error.find("built for x86-64"), std::string::npos) << error;
  }
#else
  GTEST_SKIP() << "skipped: neither x86-64 nor AArch64";
#endif
}

#if defined(__aarch64__)

// The sets this CPU runs, ARMv8.0 first.
std::vector<const KernelSet *> arm_sets() {
  const CpuFeatures &cpu = cpu_features();
  return runnable_sets({{neon_kernel_set(), cpu.has_neon_set()},
                        {dotprod_kernel_set(), cpu.has_dotprod_set()},
                        {i8mm_kernel_set(), cpu.has_i8mm_set()}},
                       [](const KernelSet &) { return true; });
}

TEST(ArmSets, AutoTakesTheBestSetThisCpuRunsAndForcedSetsNeedTheirFeatures) {
  const CpuFeatures &cpu = cpu_features();
  const KernelSelection best = select_kernel_set(KernelChoice::Auto, cpu);
  const char *expected = cpu.has_i8mm_set()      ? "i8mm"
                         : cpu.has_dotprod_set() ? "dotprod"
                         : cpu.has_neon_set()    ? "neon"
                                                 : "reference";
  EXPECT_STREQ(best.set->name, expected) << best.reason;
  for (const auto &[choice, runs, name] :
       {std::tuple{KernelChoice::Neon, cpu.has_neon_set(), "neon"},
        std::tuple{KernelChoice::DotProd, cpu.has_dotprod_set(), "dotprod"},
        std::tuple{KernelChoice::I8mm, cpu.has_i8mm_set(), "i8mm"}}) {
    if (runs)
      EXPECT_STREQ(select_kernel_set(choice, cpu).set->name, name);
    else
      EXPECT_NE(refusal(choice).find("requested but this CPU lacks"), std::string::npos)
          << refusal(choice);
  }
}

struct RowType {
  GgmlType type;
  WeightKind kind;
  size_t block_bytes;
  int per_block; // weight blocks per 128 inputs
};
const RowType kRowTypes[] = {{GgmlType::Q1_0, WeightKind::Q1_0, 18, 1},
                             {GgmlType::Q2_0, WeightKind::Q2_0, 34, 1},
                             {GgmlType::Q2_0_G64, WeightKind::Q2_0_G64, 18, 2},
                             {GgmlType::Q8_0, WeightKind::Q8_0, 34, 4}};

std::string type_name(GgmlType type) {
  return std::to_string(static_cast<int>(type));
}

// Each row kernel's outputs against sum_e w_e x_e in float64, w_e decoded by
// core's reference dequantizer and x_e read back from the set's own
// quantization (value at layout_position, times its group's scale): one
// token, a tile of 4, and a tile and one more.
TEST(ArmSets, RowKernelsGiveTheExactDotOfTheQuantizedInputs) {
  const int64_t rows = 7, blocks = 6, cols = blocks * kActBlock;
  for (const KernelSet *set : arm_sets())
    for (const RowType &t : kRowTypes)
      for (const int n_tokens : {1, 4, 5}) {
        SCOPED_TRACE(std::string(set->name) + ", type " + type_name(t.type) + ", " +
                     std::to_string(n_tokens) + " tokens");
        const size_t row_bytes = t.block_bytes * static_cast<size_t>(t.per_block * blocks);
        const std::vector<uint8_t> w = random_rows(t.block_bytes, rows, t.per_block * blocks, 21);
        const std::vector<float> x = random_inputs(n_tokens * cols, 22);
        const QuantLayout layout = set->layout[static_cast<int>(t.kind)];
        const std::vector<float> y =
            rows_of(*set, t.type, t.kind, w, row_bytes, rows, cols, x, n_tokens);
        const Quantized acts = quantize(*set, layout, x, cols, n_tokens);
        std::vector<float> weights(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
          bonsai::dequantize_row(t.type, &w[static_cast<size_t>(r) * row_bytes], weights.data(),
                                 cols);
          for (int tok = 0; tok < n_tokens; ++tok) {
            double want = 0, magnitude = 0;
            for (int64_t b = 0; b < blocks; ++b) {
              const int64_t slot = b * acts.stride + tok;
              for (int e = 0; e < kActBlock; ++e) {
                const double xv =
                    acts.q[static_cast<size_t>(slot * kActBlock + layout_position(layout, e))] *
                    static_cast<double>(acts.d[static_cast<size_t>(slot * kSubsPerBlock +
                                                                   layout_scale_group(layout, e))]);
                const double product = weights[static_cast<size_t>(b * kActBlock + e)] * xv;
                want += product;
                magnitude += std::abs(product);
              }
            }
            EXPECT_GT(magnitude, 0.0);
            EXPECT_NEAR(y[static_cast<size_t>(tok * rows + r)], want, 1e-5 * magnitude)
                << "token " << tok << " row " << r;
          }
        }
      }
}

// The dotprod and i8mm kernels form the ARMv8.0 kernels' int32 sums with
// other instructions and then apply the same float operations: the same
// floats, for a single token, 4-token tiles and pairs of tokens with one
// left over (11 tokens), over 37 rows (pairs with one left over).
TEST(ArmSets, DotprodAndI8mmRowsEqualTheNeonRowsBitForBit) {
  const std::vector<const KernelSet *> sets = arm_sets();
  if (sets.size() < 2)
    GTEST_SKIP() << "skipped: this CPU runs only the neon set (" << cpu_features().describe()
                 << ")";
  const int64_t rows = 37, blocks = 8, cols = blocks * kActBlock;
  const std::vector<float> x = random_inputs(11 * cols, 23);
  for (const RowType &t : kRowTypes) {
    const size_t row_bytes = t.block_bytes * static_cast<size_t>(t.per_block * blocks);
    const std::vector<uint8_t> w = random_rows(t.block_bytes, rows, t.per_block * blocks, 24);
    for (const int n_tokens : {1, 4, 11}) {
      const std::vector<float> want =
          rows_of(*sets[0], t.type, t.kind, w, row_bytes, rows, cols, x, n_tokens);
      for (size_t i = 1; i < sets.size(); ++i) {
        SCOPED_TRACE(std::string(sets[i]->name) + ", type " + type_name(t.type) + ", " +
                     std::to_string(n_tokens) + " tokens");
        const std::vector<float> got =
            rows_of(*sets[i], t.type, t.kind, w, row_bytes, rows, cols, x, n_tokens);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));
      }
    }
  }
}

// The tiled Q1_0 kernels: the i8mm one takes steps of 4 or more tokens in
// pairs through SMMLA (an odd step's last token and smaller steps through
// the table kernel, which the neon and dotprod sets take for every token):
// the same floats for steps of 1, 2, 3, 4, 5, 8 and 17 tokens, over 3 tiles.
TEST(ArmSets, TiledQ1KernelsOfEverySetGiveTheSameFloats) {
  const std::vector<const KernelSet *> sets = arm_sets();
  if (sets.size() < 2)
    GTEST_SKIP() << "skipped: this CPU runs only the neon set (" << cpu_features().describe()
                 << ")";
  const int64_t rows = 3 * kTileRows, blocks = 9, cols = blocks * kActBlock;
  const size_t row_bytes = 18 * static_cast<size_t>(blocks);
  const std::vector<uint8_t> natural = random_rows(18, rows, blocks, 27);
  const std::vector<float> x = random_inputs(17 * cols, 28);
  for (const int n_tokens : {1, 2, 3, 4, 5, 8, 17}) {
    std::vector<float> want;
    for (size_t i = 0; i < sets.size(); ++i) {
      SCOPED_TRACE(std::string(sets[i]->name) + ", " + std::to_string(n_tokens) + " tokens");
      const TiledKernel &kernel = sets[i]->tiled[static_cast<int>(WeightKind::Q1_0)];
      ASSERT_NE(kernel.rows, nullptr);
      std::vector<uint8_t> tiles(natural.size());
      for (int64_t t = 0; t < rows / kTileRows; ++t)
        tile_q1_rows({kernel.format, blocks, row_bytes},
                     &natural[static_cast<size_t>(t * kTileRows) * row_bytes],
                     &tiles[static_cast<size_t>(t * kTileRows) * row_bytes]);
      std::vector<float> y;
      kernel.rows(job_for({GgmlType::Q1_0, row_bytes, rows, cols, n_tokens}, tiles,
                          quantize(*sets[i], kernel.layout, x, cols, n_tokens), kernel.layout, y));
      if (i == 0)
        want = y;
      else
        EXPECT_EQ(0, std::memcmp(y.data(), want.data(), want.size() * sizeof(float)));
    }
  }
}

// F32, F16 and BF16 rows against float64 of the stored values, with widths
// that leave a partial vector (37, 131) and none (128).
TEST(ArmSets, FloatRowsMatchFloat64) {
  std::mt19937 rng(25);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const int64_t rows = 3;
  for (const KernelSet *set : arm_sets())
    for (const GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
      for (const int64_t cols : {37, 128, 131}) {
        SCOPED_TRACE(std::string(set->name) + ", type " + type_name(type) + ", " +
                     std::to_string(cols) + " columns");
        const size_t row_bytes = bonsai::row_bytes(type, cols);
        std::vector<uint8_t> w(row_bytes * rows);
        std::vector<float> weights(static_cast<size_t>(cols * rows));
        for (float &v : weights)
          v = value(rng);
        for (int64_t r = 0; r < rows; ++r)
          bonsai::quantize_row(type, &weights[static_cast<size_t>(r * cols)],
                               &w[static_cast<size_t>(r) * row_bytes], cols);
        const std::vector<float> x = random_inputs(2 * cols, 26);
        RowJob job;
        job.type = type;
        job.w = w.data();
        job.w_row_bytes = row_bytes;
        job.cols = cols;
        job.n_rows = rows;
        job.n_tokens = 2;
        job.x = x.data();
        job.ldx = cols;
        std::vector<float> y(static_cast<size_t>(2 * rows));
        job.y = y.data();
        job.ldy = rows;
        set->rows[static_cast<int>(weight_kind(type))](job);
        std::vector<float> stored(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
          bonsai::dequantize_row(type, &w[static_cast<size_t>(r) * row_bytes], stored.data(), cols);
          for (int t = 0; t < 2; ++t) {
            double want = 0, magnitude = 0;
            for (int64_t c = 0; c < cols; ++c) {
              const double p =
                  double(stored[static_cast<size_t>(c)]) * x[static_cast<size_t>(t * cols + c)];
              want += p;
              magnitude += std::abs(p);
            }
            EXPECT_NEAR(y[static_cast<size_t>(t * rows + r)], want, 1e-6 * magnitude)
                << "token " << t << " row " << r;
          }
        }
      }
}

#endif

} // namespace

// The avxvnni kernel set takes the Q1_0 and Q2_0 (both groups) dot products on AVX-VNNI
// (vpdpbusd) instead of vpmaddubsw + vpmaddwd; the int32 sums are the same,
// so its rows must equal the avx2 set's bit for bit, for one token and for
// the 8-token tiles (its accuracy against float64 is the golden suite's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "activations.hpp"
#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "kernel_test_support.hpp"
#include "kernels/kernel_set.hpp"
#include "random_blocks.hpp"

namespace {

using namespace bonsai::cpu;
using bonsai::GgmlType;

using namespace bonsai::cpu::test;

TEST(AvxVnniKernels, Q1AndQ2RowsEqualTheAvx2SetBitForBit) {
  if (!cpu_features().has_avxvnni_set())
    GTEST_SKIP() << "skipped: this CPU lacks AVX-VNNI (" << cpu_features().describe() << ")";
  const KernelSet &avx2 = *avx2_kernel_set(), &vnni = *avxvnni_kernel_set();
  EXPECT_STREQ(vnni.name, "avxvnni");
  const int64_t rows = 37, cols = 1024, blocks = cols / kActBlock;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(11 * cols));
  for (float &v : x)
    v = value(rng);
  struct Type {
    GgmlType type;
    WeightKind kind;
    size_t block_bytes; // one scale each
    int per_block;      // weight blocks per 128 inputs
  };
  for (const Type t : {Type{GgmlType::Q1_0, WeightKind::Q1_0, 18, 1},
                       Type{GgmlType::Q2_0, WeightKind::Q2_0, 34, 1},
                       Type{GgmlType::Q2_0_G64, WeightKind::Q2_0_G64, 18, 2}}) {
    const size_t row_bytes = t.block_bytes * static_cast<size_t>(t.per_block * blocks);
    const std::vector<uint8_t> w = random_rows(t.block_bytes, rows, t.per_block * blocks, 9);
    for (int n_tokens : {1, 8, 11}) { // a single token, a full tile, a tile and three more
      SCOPED_TRACE(std::to_string(n_tokens) + " tokens, type " +
                   std::to_string(static_cast<int>(t.type)));
      const std::vector<float> a =
          rows_of(avx2, t.type, t.kind, w, row_bytes, rows, cols, x, n_tokens);
      const std::vector<float> b =
          rows_of(vnni, t.type, t.kind, w, row_bytes, rows, cols, x, n_tokens);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
      double magnitude = 0;
      for (float v : a)
        magnitude += std::abs(v);
      EXPECT_GT(magnitude, 0.0); // real sums, not zeros on both sides
    }
  }
}

// A token's results do not depend on its tile: tokens 8 and 9 repeat tokens
// 0 and 1, so the 8-token tile (tokens 0..7) and the single-token kernel
// that takes rows in pairs (tokens 8, 9; 37 rows, so an odd last row too)
// must give the same floats, in both AVX2 sets.
TEST(AvxVnniKernels, ATokensRowsAreTheSameInATileAndAlone) {
  if (!cpu_features().has_avx2_set())
    GTEST_SKIP() << "skipped: this CPU lacks AVX2 (" << cpu_features().describe() << ")";
  const int64_t rows = 37, cols = 1024, blocks = cols / kActBlock;
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(10 * cols));
  for (size_t i = 0; i < static_cast<size_t>(8 * cols); ++i)
    x[i] = value(rng);
  std::copy(x.begin(), x.begin() + 2 * cols, x.begin() + 8 * cols);
  std::vector<const KernelSet *> sets = {avx2_kernel_set()};
  if (cpu_features().has_avxvnni_set())
    sets.push_back(avxvnni_kernel_set());
  for (const KernelSet *set : sets)
    for (const auto &[type, kind, block_bytes] :
         {std::tuple{GgmlType::Q1_0, WeightKind::Q1_0, size_t{18}},
          std::tuple{GgmlType::Q2_0, WeightKind::Q2_0, size_t{34}}}) {
      SCOPED_TRACE(std::string(set->name) + ", type " + std::to_string(static_cast<int>(type)));
      const std::vector<uint8_t> w = random_rows(block_bytes, rows, blocks, 3);
      const std::vector<float> y =
          rows_of(*set, type, kind, w, block_bytes * blocks, rows, cols, x, 10);
      for (int64_t r = 0; r < rows; ++r)
        for (int t = 0; t < 2; ++t)
          ASSERT_EQ(y[static_cast<size_t>((8 + t) * rows + r)],
                    y[static_cast<size_t>(t * rows + r)])
              << "row " << r << ", token " << t;
    }
}

// Mainline Q2_0 (two 64-weight halves per 128 inputs) in both AVX2 sets,
// against the dot product computed in double from the same quantized
// activations: 16 blocks (the unsigned-code form with per-tile sums of the
// activations) and 260 blocks (past the 256 those sums have room for: the
// signed form), for 1 and 5 tokens (a 4-token tile and one more).
TEST(AvxVnniKernels, MainlineQ2RowsAreTheExactDotOfTheQuantizedInputs) {
  if (!cpu_features().has_avx2_set())
    GTEST_SKIP() << "skipped: this CPU lacks AVX2 (" << cpu_features().describe() << ")";
  std::vector<const KernelSet *> sets = {avx2_kernel_set()};
  if (cpu_features().has_avxvnni_set())
    sets.push_back(avxvnni_kernel_set());
  const int64_t rows = 5;
  const size_t pair_bytes = 2 * sizeof(bonsai::BlockQ2_0G64);
  for (const KernelSet *set : sets)
    for (const int64_t blocks : {int64_t{16}, int64_t{260}})
      for (const int n_tokens : {1, 5}) {
        SCOPED_TRACE(std::string(set->name) + ", " + std::to_string(blocks) + " blocks, " +
                     std::to_string(n_tokens) + " tokens");
        const int64_t cols = blocks * kActBlock;
        std::mt19937 rng(static_cast<uint32_t>(blocks + n_tokens));
        std::uniform_real_distribution<float> value(-2.0f, 2.0f);
        std::vector<float> x(static_cast<size_t>(n_tokens * cols));
        for (float &v : x)
          v = value(rng);
        // Codes 0..2 (ternary), f16 scales of either sign.
        std::vector<uint8_t> w(pair_bytes * static_cast<size_t>(rows * blocks));
        for (size_t at = 0; at < w.size(); at += sizeof(bonsai::BlockQ2_0G64)) {
          const uint16_t d =
              static_cast<uint16_t>(0x2000 + rng() % 0x400) | (rng() % 2 ? 0x8000 : 0);
          std::memcpy(&w[at], &d, 2);
          for (size_t i = 2; i < sizeof(bonsai::BlockQ2_0G64); ++i) {
            uint8_t byte = 0;
            for (int k = 0; k < 4; ++k)
              byte |= static_cast<uint8_t>((rng() % 3) << (2 * k));
            w[at + i] = byte;
          }
        }
        const QuantLayout layout = set->layout[static_cast<int>(WeightKind::Q2_0_G64)];
        const std::vector<float> y = rows_of(*set, GgmlType::Q2_0_G64, WeightKind::Q2_0_G64, w,
                                             pair_bytes * blocks, rows, cols, x, n_tokens);
        // The same quantized activations, read back value by value.
        const Quantized acts = quantize(*set, layout, x, cols, n_tokens);
        const std::vector<int8_t> &q = acts.q;
        const std::vector<float> &d = acts.d;
        const int64_t stride = acts.stride;
        for (int t = 0; t < n_tokens; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            double want = 0, magnitude = 0;
            for (int64_t b = 0; b < blocks; ++b) {
              const int64_t slot = b * stride + t;
              for (int e = 0; e < kActBlock; ++e) {
                const double xv =
                    q[static_cast<size_t>(slot * kActBlock + layout_position(layout, e))] *
                    static_cast<double>(d[static_cast<size_t>(slot * meta_per_block(layout) +
                                                              layout_scale_group(layout, e))]);
                const uint8_t *half = &w[static_cast<size_t>(r * blocks + b) * pair_bytes +
                                         (e < 64 ? 0 : sizeof(bonsai::BlockQ2_0G64))];
                uint16_t dh;
                std::memcpy(&dh, half, 2);
                const int i = e % 64;
                const int code = (half[2 + i / 4] >> (2 * (i % 4))) & 3;
                const double wv = (code - 1) * static_cast<double>(bonsai::fp16_to_f32(dh));
                want += wv * xv;
                magnitude += std::abs(wv * xv);
              }
            }
            const float got = y[static_cast<size_t>(t * rows + r)];
            EXPECT_NEAR(got, want, 1e-5 * magnitude) << "token " << t << " row " << r;
          }
      }
}

TEST(AvxVnniKernels, SelectedByNameOrRefusedWithTheCpusFeatures) {
  if (avxvnni_kernel_set() == nullptr) // refused by architecture: arm_sets_test.cpp
    GTEST_SKIP() << "skipped: not an x86-64 build";
  const CpuFeatures &cpu = cpu_features();
  if (cpu.has_avxvnni_set()) {
    EXPECT_STREQ(select_kernel_set(KernelChoice::AvxVnni, cpu).set->name, "avxvnni");
    return;
  }
  try {
    select_kernel_set(KernelChoice::AvxVnni, cpu);
    ADD_FAILURE() << "kernels=avxvnni was accepted on a CPU without AVX-VNNI";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("lacks AVX2/FMA/F16C with AVX-VNNI"), std::string::npos);
  }
}

} // namespace

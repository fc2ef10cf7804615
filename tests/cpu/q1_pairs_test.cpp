// Q1_0 rows repacked in pairs (plugins/cpu/src/q1_pairs.*): the layout
// byte by byte on a hand-made matrix, the way back to the file's rows, and
// the AVX-512 pair kernel against float64 sums of the same quantized values
// on shapes with odd rows, partial scale groups and every token tile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "activations.hpp"
#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "kernels/simd_kernels.hpp"
#include "q1_pairs.hpp"

namespace bonsai::cpu {
namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ1_0);

std::vector<uint8_t> random_q1_rows(int64_t rows, int64_t n_blocks, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.01f, 0.1f);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * n_blocks) * kBlockBytes);
  for (size_t block = 0; block < bytes.size() / kBlockBytes; ++block) {
    uint8_t *p = bytes.data() + block * kBlockBytes;
    const uint16_t d = f32_to_fp16(scale(rng));
    std::memcpy(p, &d, 2);
    for (size_t i = 2; i < kBlockBytes; ++i)
      p[i] = static_cast<uint8_t>(byte(rng));
  }
  return bytes;
}

std::vector<uint8_t> repack(const std::vector<uint8_t> &rows, const Q1PairShape &shape) {
  std::vector<uint8_t> packed(shape.total_bytes(), 0xEE);
  repack_q1_pairs(rows.data(), static_cast<size_t>(shape.n_blocks) * kBlockBytes, shape, 0,
                  shape.pairs(), packed.data());
  return packed;
}

TEST(Q1Pairs, LayoutOfThreeRowsOfNineBlocks) {
  const Q1PairShape shape{3, 9};
  ASSERT_EQ(shape.pairs(), 2);
  ASSERT_EQ(shape.groups(), 2);
  ASSERT_EQ(shape.pair_bytes(), 2 * 32 + 9 * 32u); // two scale headers, 9 blocks of bits
  // Every byte of row r, block b says where it came from.
  std::vector<uint8_t> rows(3 * 9 * kBlockBytes);
  for (int r = 0; r < 3; ++r)
    for (int b = 0; b < 9; ++b)
      for (size_t i = 0; i < kBlockBytes; ++i)
        rows[(r * 9 + b) * kBlockBytes + i] = static_cast<uint8_t>(r * 100 + b * 10 + i);
  const std::vector<uint8_t> packed = repack(rows, shape);
  const auto at = [&](int pair, size_t offset) {
    return packed[pair * shape.pair_bytes() + offset];
  };
  // Pair 0, group 0: block 1's scales at 4..7 (row 0 then row 1).
  EXPECT_EQ(at(0, 4), 0 * 100 + 1 * 10 + 0);
  EXPECT_EQ(at(0, 5), 0 * 100 + 1 * 10 + 1);
  EXPECT_EQ(at(0, 6), 1 * 100 + 1 * 10 + 0);
  EXPECT_EQ(at(0, 7), 1 * 100 + 1 * 10 + 1);
  // Block 2's bits start at 32 + 2 * 32: qword 1 = row 0's bytes 6..9 of the
  // block (sign dword 1), then row 1's.
  const size_t bits2 = 32 + 2 * 32;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(at(0, bits2 + 8 + i), 0 * 100 + 2 * 10 + 6 + i);
    EXPECT_EQ(at(0, bits2 + 12 + i), 1 * 100 + 2 * 10 + 6 + i);
  }
  // Block 8 opens group 1 (offset 288): its scales first, the rest zero.
  EXPECT_EQ(at(0, 288 + 0), 0 * 100 + 8 * 10 + 0);
  EXPECT_EQ(at(0, 288 + 2), 1 * 100 + 8 * 10 + 0);
  for (size_t i = 4; i < 32; ++i)
    EXPECT_EQ(at(0, 288 + i), 0) << "scale padding byte " << i;
  // Row 2 has no partner: pair 1's second row is zero.
  EXPECT_EQ(at(1, 0), 2 * 100 + 0 * 10 + 0);
  EXPECT_EQ(at(1, 2), 0);
  EXPECT_EQ(at(1, 32 + 4), 0);
  EXPECT_EQ(at(1, 32 + 0), 2 * 100 + 0 + 2);
}

TEST(Q1Pairs, RowsComeBackAsStored) {
  for (int64_t rows : {1, 2, 5, 16})
    for (int64_t n_blocks : {1, 8, 9, 17}) {
      const Q1PairShape shape{rows, n_blocks};
      const std::vector<uint8_t> file = random_q1_rows(rows, n_blocks, 7);
      const std::vector<uint8_t> packed = repack(file, shape);
      const size_t row_bytes = static_cast<size_t>(n_blocks) * kBlockBytes;
      std::vector<uint8_t> row(row_bytes);
      for (int64_t r = 0; r < rows; ++r) {
        q1_pairs_row(packed.data(), shape, r, row.data());
        ASSERT_EQ(0, std::memcmp(row.data(), file.data() + r * row_bytes, row_bytes))
            << rows << " rows, " << n_blocks << " blocks, row " << r;
      }
    }
}

class Q1PairKernel : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpu_features().has_avx512_set())
      GTEST_SKIP() << "skipped: this CPU lacks AVX-512 F/BW/VNNI (" << cpu_features().describe()
                   << ")";
  }
};

// y = W x for every token tile (1..8 tokens: 3 + 3 + 2, 2 + 2, ...), rows
// that leave a pair and a 4-pair tile unfilled, and a partial scale group.
TEST_F(Q1PairKernel, MatchesFloat64OverTheSameQuantizedValues) {
  const int64_t n_rows = 11, n_blocks = 9, cols = n_blocks * kActBlock;
  const Q1PairShape shape{n_rows, n_blocks};
  const std::vector<uint8_t> file = random_q1_rows(n_rows, n_blocks, 3);
  const std::vector<uint8_t> packed = repack(file, shape);
  std::vector<float> w(static_cast<size_t>(n_rows * cols));
  for (int64_t r = 0; r < n_rows; ++r)
    dequantize_row(GgmlType::Q1_0, file.data() + r * n_blocks * kBlockBytes, w.data() + r * cols,
                   cols);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int n_tokens = 1; n_tokens <= 8; ++n_tokens) {
    std::vector<float> x(static_cast<size_t>(n_tokens * cols));
    for (float &v : x)
      v = normal(rng);
    x[17] = 30.0f; // an outlier in one scale group of token 0
    const int64_t stride = padded_token_stride(n_tokens);
    QuantBuffer buffer;
    buffer.reserve(stride, cols, kLaneMetaPerBlock);
    for (int t = 0; t < n_tokens; ++t) {
      QuantTarget target{buffer.q() + t * kActBlock, buffer.d() + t * kLaneMetaPerBlock,
                         buffer.dsum() + t, stride};
      quantize_act_row(x.data() + t * cols, cols, QuantLayout::Q1Pairs512, target);
    }
    RowJob job;
    job.type = GgmlType::Q1_0;
    job.w = packed.data();
    job.w_row_bytes = shape.pair_bytes();
    job.cols = cols;
    job.n_rows = n_rows;
    job.n_tokens = n_tokens;
    job.q = QuantizedActs{cols,       n_blocks,   n_tokens, stride, kLaneMetaPerBlock,
                          buffer.q(), buffer.d(), nullptr};
    std::vector<float> y(static_cast<size_t>(n_tokens * n_rows), NAN);
    job.y = y.data();
    job.ldy = n_rows;
    avx512_rows_q1_pairs(job);
    for (int t = 0; t < n_tokens; ++t)
      for (int64_t r = 0; r < n_rows; ++r) {
        // The quantized activation of value e is scale_g * q_e.
        double want = 0.0, magnitude = 0.0;
        for (int64_t e = 0; e < cols; ++e) {
          const int64_t b = e / kActBlock, i = e % kActBlock;
          const int8_t qe = job.q.q_block(t, b)[i];
          const float scale = job.q.d_block(t, b)[layout_scale_group(QuantLayout::Q1Pairs512, i)];
          const double term = static_cast<double>(w[r * cols + e]) * scale * qe;
          want += term;
          magnitude += std::fabs(term);
        }
        EXPECT_NEAR(y[t * n_rows + r], want, 1e-5 * magnitude + 1e-6)
            << n_tokens << " tokens: token " << t << ", row " << r;
      }
  }
}

} // namespace
} // namespace bonsai::cpu

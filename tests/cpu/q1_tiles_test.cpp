// Q1_0 in 32-row tiles (plugins/cpu/src/q1_tiles.hpp) and the kernels that
// read them (the AVX2 table kernel on sign lines, the AArch64 one on
// row-order lines, the AVX-512 mask kernel on nibble masks): the layouts by
// hand, tiling and untiling as exact inverses, each kernel against a
// float64 dot of the quantized inputs, and each token's result independent
// of the other tokens of its step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "activations.hpp"
#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "kernel_test_support.hpp"
#include "kernels/kernel_set.hpp"
#include "kernels/simd_kernels.hpp"
#include "q1_tiles.hpp"
#include "random_blocks.hpp"

namespace {

using namespace bonsai::cpu;
using bonsai::BlockQ1_0;
using bonsai::GgmlType;
using namespace bonsai::cpu::test;

constexpr size_t kBlock = sizeof(BlockQ1_0);

std::vector<uint8_t> random_q1_rows(int64_t rows, int64_t blocks, uint32_t seed) {
  return bonsai::cpu::test::random_rows(kBlock, rows, blocks, seed);
}

Q1Tile shape_of(TileFormat format, int64_t blocks) {
  return {format, blocks, kBlock * static_cast<size_t>(blocks)};
}

std::vector<uint8_t> tiled(TileFormat format, const std::vector<uint8_t> &rows, int64_t n_rows,
                           int64_t blocks) {
  std::vector<uint8_t> out(rows.size());
  const Q1Tile shape = shape_of(format, blocks);
  for (int64_t t = 0; t < n_rows / kQ1TileRows; ++t)
    tile_q1_rows(shape, rows.data() + static_cast<size_t>(t) * kQ1TileRows * shape.row_bytes,
                 out.data() + static_cast<size_t>(t) * kQ1TileRows * shape.row_bytes);
  return out;
}

const char *format_name(TileFormat format) {
  switch (format) {
  case TileFormat::Q1SignLines:
    return "sign lines";
  case TileFormat::Q1RowLines:
    return "row lines";
  default:
    return "nibble masks";
  }
}

// Block b of a tile by hand: scales at 2r, then line k at 64 + 32k holding
// row r's sign byte k at position p, where the kernel's int16 and int32
// widening puts row r: p = 16 (r % 8 / 4) + 8 (r / 16) + 2 (r % 4) + r / 8 % 2.
TEST(Q1Tiles, SignLinesByHand) {
  const int64_t blocks = 3;
  const std::vector<uint8_t> rows = random_q1_rows(kQ1TileRows, blocks, 1);
  const std::vector<uint8_t> tile = tiled(TileFormat::Q1SignLines, rows, kQ1TileRows, blocks);
  EXPECT_EQ(q1_tile_row(0), 0);
  EXPECT_EQ(q1_tile_row(1), 8);  // odd int16 lane of the low register
  EXPECT_EQ(q1_tile_row(9), 24); // odd lane of the high register
  EXPECT_EQ(q1_tile_row(22), 7); // upper half of the low register, even
  EXPECT_EQ(q1_tile_row(31), 31);
  for (int p = 0; p < kQ1TileRows; ++p)
    EXPECT_EQ(q1_tile_position(q1_tile_row(p)), p);
  for (int64_t b = 0; b < blocks; ++b)
    for (int r = 0; r < kQ1TileRows; ++r) {
      const uint8_t *src = &rows[(static_cast<size_t>(r) * blocks + b) * kBlock];
      const uint8_t *blk = &tile[static_cast<size_t>(b) * 576];
      EXPECT_EQ(0, std::memcmp(blk + 2 * r, src, 2)) << "scale of row " << r;
      const int p = 16 * (r % 8 / 4) + 8 * (r / 16) + 2 * (r % 4) + r / 8 % 2;
      for (int k = 0; k < 16; ++k)
        ASSERT_EQ(blk[64 + 32 * k + p], src[2 + k])
            << "block " << b << " row " << r << " byte " << k;
    }
}

// Row-order lines by hand: scales at 2r, then line k at 64 + 32k holding
// row r's sign byte k at position r.
TEST(Q1Tiles, RowLinesByHand) {
  const int64_t blocks = 3;
  const std::vector<uint8_t> rows = random_q1_rows(kQ1TileRows, blocks, 8);
  const std::vector<uint8_t> tile = tiled(TileFormat::Q1RowLines, rows, kQ1TileRows, blocks);
  for (int64_t b = 0; b < blocks; ++b)
    for (int r = 0; r < kQ1TileRows; ++r) {
      const uint8_t *src = &rows[(static_cast<size_t>(r) * blocks + b) * kBlock];
      const uint8_t *blk = &tile[static_cast<size_t>(b) * 576];
      EXPECT_EQ(0, std::memcmp(blk + 2 * r, src, 2)) << "scale of row " << r;
      for (int k = 0; k < 16; ++k)
        ASSERT_EQ(blk[64 + 32 * k + r], src[2 + k])
            << "block " << b << " row " << r << " byte " << k;
    }
}

// Block b of a tile by hand: scales at 2r, then for half h = r / 16 and
// group n the 64-bit word at 64 + 256h + 8n with row r's sign bits 4n..4n+3
// at bits 4 (r % 16)..4 (r % 16) + 3.
TEST(Q1Tiles, NibbleMasksByHand) {
  const int64_t blocks = 3;
  const std::vector<uint8_t> rows = random_q1_rows(kQ1TileRows, blocks, 7);
  const std::vector<uint8_t> tile = tiled(TileFormat::Q1NibbleMasks, rows, kQ1TileRows, blocks);
  for (int64_t b = 0; b < blocks; ++b)
    for (int r = 0; r < kQ1TileRows; ++r) {
      const uint8_t *src = &rows[(static_cast<size_t>(r) * blocks + b) * kBlock];
      const uint8_t *blk = &tile[static_cast<size_t>(b) * 576];
      EXPECT_EQ(0, std::memcmp(blk + 2 * r, src, 2)) << "scale of row " << r;
      for (int e = 0; e < kActBlock; ++e) {
        const int n = e / 4, j = e % 4;
        uint64_t mask;
        std::memcpy(&mask, blk + 64 + 256 * (r / 16) + 8 * n, sizeof(mask));
        ASSERT_EQ((mask >> (4 * (r % 16) + j)) & 1, (src[2 + e / 8] >> (e % 8)) & 1u)
            << "block " << b << " row " << r << " input " << e;
      }
    }
}

TEST(Q1Tiles, UntilingGivesBackEveryRow) {
  for (const TileFormat format :
       {TileFormat::Q1SignLines, TileFormat::Q1RowLines, TileFormat::Q1NibbleMasks})
    for (const int64_t blocks : {int64_t{1}, int64_t{16}, int64_t{256}}) {
      SCOPED_TRACE(std::string(format_name(format)) + ", " + std::to_string(blocks) + " blocks");
      const int64_t n_rows = 2 * kQ1TileRows;
      const std::vector<uint8_t> rows = random_q1_rows(n_rows, blocks, 2);
      const std::vector<uint8_t> tiles = tiled(format, rows, n_rows, blocks);
      const Q1Tile shape = shape_of(format, blocks);
      std::vector<uint8_t> row(shape.row_bytes);
      for (int64_t r = 0; r < n_rows; ++r) {
        untile_q1_row(shape,
                      &tiles[static_cast<size_t>(r / kQ1TileRows) * kQ1TileRows * shape.row_bytes],
                      static_cast<int>(r % kQ1TileRows), row.data());
        ASSERT_EQ(0, std::memcmp(row.data(), &rows[static_cast<size_t>(r) * shape.row_bytes],
                                 shape.row_bytes))
            << "row " << r;
      }
    }
}

TEST(Q1Tiles, OnlyWholeTilesOfModerateWidthAreTiled) {
  EXPECT_TRUE(q1_tileable(64, 2048));
  EXPECT_TRUE(q1_tileable(32, kQ1TileMaxCols));
  EXPECT_FALSE(q1_tileable(48, 2048));
  EXPECT_FALSE(q1_tileable(64, kQ1TileMaxCols + 128));
}

// Each tiled kernel's outputs are sum_e w_e x_e over the quantized inputs
// (Natural bytes and scales, read back from a Natural quantization, which
// Q1Tables shares), to float rounding: one token, and five (the AVX-512
// kernel's passes of 3 and of 2 tokens).
TEST(Q1Tiles, TiledKernelsGiveTheExactDotOfTheQuantizedInputs) {
  const std::vector<const KernelSet *> sets = tiled_sets(WeightKind::Q1_0);
  if (sets.empty())
    GTEST_SKIP() << "skipped: no tiled Q1_0 kernel runs on this CPU";
  for (const KernelSet *set : sets)
    for (const int64_t blocks : {int64_t{16}, int64_t{48}})
      for (const int n_tokens : {1, 5}) {
        SCOPED_TRACE(std::string(set->name) + ", " + std::to_string(blocks) + " blocks, " +
                     std::to_string(n_tokens) + " tokens");
        const TiledKernel &kernel = set->tiled[static_cast<int>(WeightKind::Q1_0)];
        const int64_t rows = 3 * kQ1TileRows, cols = blocks * kActBlock;
        const std::vector<uint8_t> w = random_q1_rows(rows, blocks, 3);
        const std::vector<float> x = random_inputs(n_tokens * cols, 4);
        const Quantized acts = quantize(*set, kernel.layout, x, cols, n_tokens);
        const Quantized natural = quantize(*set, QuantLayout::Natural, x, cols, n_tokens);
        ASSERT_EQ(acts.d, natural.d);
        ASSERT_EQ(acts.dsum, natural.dsum);
        std::vector<float> y;
        const JobShape shape{GgmlType::Q1_0, kBlock * static_cast<size_t>(blocks), rows, cols,
                             n_tokens};
        kernel.rows(job_for(shape, tiled(kernel.format, w, rows, blocks), acts, kernel.layout, y));
        for (int t = 0; t < n_tokens; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            double want = 0, magnitude = 0;
            for (int64_t b = 0; b < blocks; ++b) {
              const uint8_t *block = &w[static_cast<size_t>(r * blocks + b) * kBlock];
              uint16_t dh;
              std::memcpy(&dh, block, 2);
              const double dw = bonsai::fp16_to_f32(dh);
              // Block b of token t in the block-major buffer.
              const size_t slot = static_cast<size_t>(b * natural.stride + t);
              for (int e = 0; e < kActBlock; ++e) {
                const double xv =
                    natural.q[slot * kActBlock + static_cast<size_t>(e)] *
                    static_cast<double>(natural.d[slot * 8 + static_cast<size_t>(e / 16)]);
                const double wv = ((block[2 + e / 8] >> (e % 8)) & 1) ? dw : -dw;
                want += wv * xv;
                magnitude += std::abs(wv * xv);
              }
            }
            EXPECT_NEAR(y[static_cast<size_t>(t * rows + r)], want, 1e-5 * magnitude)
                << "token " << t << " row " << r;
          }
      }
}

// A token's outputs are the same floats whether its step held it alone or
// with others (what speculative verification and prompt-cache reuse rely
// on): one call per token against one call for all.
TEST(Q1Tiles, EveryTokenGetsTheSameResultAloneAndInAStep) {
  const std::vector<const KernelSet *> sets = tiled_sets(WeightKind::Q1_0);
  if (sets.empty())
    GTEST_SKIP() << "skipped: no tiled Q1_0 kernel runs on this CPU";
  for (const KernelSet *set : sets) {
    SCOPED_TRACE(set->name);
    const TiledKernel &kernel = set->tiled[static_cast<int>(WeightKind::Q1_0)];
    const int n_tokens = 8; // the AVX-512 kernel: passes of 3, 3 and 2 tokens
    const int64_t rows = 2 * kQ1TileRows, blocks = 20, cols = blocks * kActBlock;
    const std::vector<uint8_t> w =
        tiled(kernel.format, random_q1_rows(rows, blocks, 5), rows, blocks);
    const std::vector<float> x = random_inputs(n_tokens * cols, 6);
    JobShape shape{GgmlType::Q1_0, kBlock * static_cast<size_t>(blocks), rows, cols, n_tokens};
    std::vector<float> together;
    kernel.rows(job_for(shape, w, quantize(*set, kernel.layout, x, cols, n_tokens), kernel.layout,
                        together));
    shape.n_tokens = 1;
    for (int t = 0; t < n_tokens; ++t) {
      const std::vector<float> xt(x.begin() + t * cols, x.begin() + (t + 1) * cols);
      std::vector<float> alone;
      kernel.rows(
          job_for(shape, w, quantize(*set, kernel.layout, xt, cols, 1), kernel.layout, alone));
      EXPECT_EQ(0, std::memcmp(alone.data(), together.data() + t * rows, rows * sizeof(float)))
          << "token " << t;
    }
  }
}

} // namespace

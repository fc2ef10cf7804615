// The CUDA kernels' arithmetic, run on the CPU through kernel_emulator.hpp
// and checked against float64 math on weights decoded by core's reference
// dequantizer (an independent implementation of the formats). A GPU run is
// still needed for everything the emulator cannot show (memory model,
// launch limits, performance).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <random>
#include <vector>

#include "kernel_emulator.hpp"
#include "random_floats.hpp"
// The kernel files, compiled as C++ (they are at global scope, as in NVRTC).
#include "common_prelude.cuh"
// The int8 record format and MMA, before the kernel files that use them.
#include "int8_input.cuh"
#include "int8_mma.cuh"

#include "attention_tc.cuh"
#include "gemv_dp4a.cuh"
#include "layer.cuh"
#include "matmul.cuh"
#include "matmul_mmq.cuh"
#include "matmul_tc.cuh"

#include "bonsai/core/formats.hpp"
#include "weight_repack.hpp"

namespace {

using bonsai::GgmlType;
using u8 = unsigned char;

using kernel_test::random_floats;

// A weight matrix in `type` plus its float64-exact decoded values.
struct QuantMatrix {
  GgmlType type;
  int rows, cols;
  std::vector<u8> bytes;      // GGUF layout
  std::vector<u8> device;     // as uploaded: planar for Q1_0/Q2_0 (weight_repack.hpp)
  std::vector<float> decoded; // rows x cols, from core's dequantize_row
};

QuantMatrix make_matrix(GgmlType type, int rows, int cols, uint32_t seed) {
  QuantMatrix m{type, rows, cols, {}, {}, {}};
  const size_t row_bytes = bonsai::row_bytes(type, cols);
  m.bytes.resize(row_bytes * rows);
  m.decoded.resize(static_cast<size_t>(rows) * cols);
  const std::vector<float> src = random_floats(static_cast<size_t>(rows) * cols, seed);
  for (int r = 0; r < rows; ++r) {
    bonsai::quantize_row(type, src.data() + static_cast<size_t>(r) * cols,
                         m.bytes.data() + r * row_bytes, cols);
    bonsai::dequantize_row(type, m.bytes.data() + r * row_bytes,
                           m.decoded.data() + static_cast<size_t>(r) * cols, cols);
  }
  m.device = m.bytes;
  if (bonsai::cuda::is_planar_type(static_cast<uint32_t>(type)))
    bonsai::cuda::repack_planar({static_cast<uint32_t>(type), m.bytes.data(), rows, cols},
                                m.device.data());
  return m;
}

double dot(const float *a, const float *b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i)
    s += static_cast<double>(a[i]) * b[i];
  return s;
}

double abs_dot(const float *a, const float *b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i)
    s += std::fabs(static_cast<double>(a[i]) * b[i]);
  return s;
}

// f32 accumulation error bound relative to sum |w x| (generous for n <= 1024).
constexpr double kRelTol = 2e-6;

using MatmulKernel = void (*)(const u8 *, const float *, float *, int, int, int, int);
using SwigluKernel = void (*)(const u8 *, const u8 *, const float *, float *, int, int, int);
using RowsKernel = void (*)(const u8 *, const int *, float *, int, int);

struct TypeKernels {
  GgmlType type;
  MatmulKernel gemv, gemm;
  SwigluKernel gemv_swiglu, gemm_swiglu;
  RowsKernel get_rows;
};

const TypeKernels kAllTypes[] = {
    {GgmlType::F32, bonsai_gemv_f32, bonsai_gemm_f32, bonsai_gemv_swiglu_f32,
     bonsai_gemm_swiglu_f32, bonsai_get_rows_f32},
    {GgmlType::F16, bonsai_gemv_f16, bonsai_gemm_f16, bonsai_gemv_swiglu_f16,
     bonsai_gemm_swiglu_f16, bonsai_get_rows_f16},
    {GgmlType::BF16, bonsai_gemv_bf16, bonsai_gemm_bf16, bonsai_gemv_swiglu_bf16,
     bonsai_gemm_swiglu_bf16, bonsai_get_rows_bf16},
    {GgmlType::Q8_0, bonsai_gemv_q8_0, bonsai_gemm_q8_0, bonsai_gemv_swiglu_q8_0,
     bonsai_gemm_swiglu_q8_0, bonsai_get_rows_q8_0},
    {GgmlType::Q1_0, bonsai_gemv_q1_0, bonsai_gemm_q1_0, bonsai_gemv_swiglu_q1_0,
     bonsai_gemm_swiglu_q1_0, bonsai_get_rows_q1_0},
    {GgmlType::Q2_0, bonsai_gemv_q2_0, bonsai_gemm_q2_0, bonsai_gemv_swiglu_q2_0,
     bonsai_gemm_swiglu_q2_0, bonsai_get_rows_q2_0},
};

void PrintTo(const TypeKernels &k, std::ostream *out) {
  *out << bonsai::type_name(static_cast<uint32_t>(k.type));
}

// The launch geometry of plugins/cuda/src/launch.cpp: 4 warps (rows) per
// block, 8 tokens per GEMM tile.
emu::Dim3 matmul_grid(int rows, int n_tokens, bool gemm) {
  return {static_cast<unsigned>((rows + 3) / 4),
          gemm ? static_cast<unsigned>((n_tokens + 7) / 8) : 1u, 1};
}

class KernelByType : public ::testing::TestWithParam<TypeKernels> {};

TEST_P(KernelByType, GemvAndGemmMatchFloat64WithAndWithoutResidual) {
  const TypeKernels k = GetParam();
  const int rows = 10, cols = 256; // 10 rows: the last block is half empty
  const QuantMatrix w = make_matrix(k.type, rows, cols, 7);
  for (const int n_tokens : {1, 11}) {
    const bool gemm = n_tokens > 1;
    const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 11);
    const std::vector<float> residual = random_floats(static_cast<size_t>(n_tokens) * rows, 13);
    for (const int accumulate : {0, 1}) {
      std::vector<float> y = accumulate ? residual : std::vector<float>(residual.size(), -99.0f);
      const MatmulKernel kernel = gemm ? k.gemm : k.gemv;
      emu::launch(matmul_grid(rows, n_tokens, gemm), 128, 0, [&] {
        kernel(w.device.data(), x.data(), y.data(), rows, cols, n_tokens, accumulate);
      });
      for (int t = 0; t < n_tokens; ++t)
        for (int r = 0; r < rows; ++r) {
          const float *wr = w.decoded.data() + static_cast<size_t>(r) * cols;
          const float *xt = x.data() + static_cast<size_t>(t) * cols;
          const double expected = dot(wr, xt, cols) + (accumulate ? residual[t * rows + r] : 0.0);
          const double bound = kRelTol * (abs_dot(wr, xt, cols) + 1.0);
          EXPECT_NEAR(y[t * rows + r], expected, bound)
              << bonsai::type_name(static_cast<uint32_t>(k.type)) << " token " << t << " row " << r
              << " n_tokens " << n_tokens << " accumulate " << accumulate;
        }
    }
  }
}

TEST_P(KernelByType, GemvAndGemmGiveBitIdenticalRows) {
  // Decode (GEMV) and prefill (GEMM) must agree exactly so that a token's
  // logits do not depend on how the prompt was split into steps.
  const TypeKernels k = GetParam();
  const int rows = 8, cols = 384;
  const QuantMatrix w = make_matrix(k.type, rows, cols, 21);
  const int n_tokens = 9;
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 23);
  std::vector<float> batched(static_cast<size_t>(n_tokens) * rows);
  emu::launch(matmul_grid(rows, n_tokens, true), 128, 0,
              [&] { k.gemm(w.device.data(), x.data(), batched.data(), rows, cols, n_tokens, 0); });
  for (int t = 0; t < n_tokens; ++t) {
    std::vector<float> single(rows);
    emu::launch(matmul_grid(rows, 1, false), 128, 0, [&] {
      k.gemv(w.device.data(), x.data() + static_cast<size_t>(t) * cols, single.data(), rows, cols,
             1, 0);
    });
    for (int r = 0; r < rows; ++r)
      EXPECT_EQ(single[r], batched[t * rows + r]) << "token " << t << " row " << r;
  }
}

TEST_P(KernelByType, SwigluEpilogueMatchesFloat64) {
  const TypeKernels k = GetParam();
  const int rows = 6, cols = 256;
  const QuantMatrix gate = make_matrix(k.type, rows, cols, 31);
  const QuantMatrix up = make_matrix(k.type, rows, cols, 37);
  for (const int n_tokens : {1, 10}) {
    const bool gemm = n_tokens > 1;
    const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 41, 0.2f);
    std::vector<float> out(static_cast<size_t>(n_tokens) * rows, -99.0f);
    const SwigluKernel kernel = gemm ? k.gemm_swiglu : k.gemv_swiglu;
    emu::launch(matmul_grid(rows, n_tokens, gemm), 128, 0, [&] {
      kernel(gate.device.data(), up.device.data(), x.data(), out.data(), rows, cols, n_tokens);
    });
    for (int t = 0; t < n_tokens; ++t)
      for (int r = 0; r < rows; ++r) {
        const float *xt = x.data() + static_cast<size_t>(t) * cols;
        const double g = dot(gate.decoded.data() + static_cast<size_t>(r) * cols, xt, cols);
        const double u = dot(up.decoded.data() + static_cast<size_t>(r) * cols, xt, cols);
        const double expected = g / (1.0 + std::exp(-g)) * u;
        EXPECT_NEAR(out[t * rows + r], expected, 1e-5 * (std::fabs(expected) + 1.0))
            << "token " << t << " row " << r;
      }
  }
}

TEST_P(KernelByType, GetRowsDecodesTheRequestedRowsExactly) {
  const TypeKernels k = GetParam();
  const int rows = 5, cols = 256;
  const QuantMatrix w = make_matrix(k.type, rows, cols, 43);
  const std::vector<int> ids = {3, 0, 4, 3};
  std::vector<float> out(ids.size() * cols);
  emu::launch({static_cast<unsigned>(ids.size()), 1, 1}, 256, 0,
              [&] { k.get_rows(w.device.data(), ids.data(), out.data(), rows, cols); });
  for (size_t t = 0; t < ids.size(); ++t)
    for (int c = 0; c < cols; ++c)
      ASSERT_EQ(out[t * cols + c], w.decoded[static_cast<size_t>(ids[t]) * cols + c])
          << "token " << t << " col " << c;
}

INSTANTIATE_TEST_SUITE_P(Types, KernelByType, ::testing::ValuesIn(kAllTypes), [](const auto &info) {
  return std::string(bonsai::type_name(static_cast<uint32_t>(info.param.type)));
});

// Asserts out[t][r] = W[r] . x[t] (+ residual[t][r] when residual is not
// null) within bound(W[r], x[t], cols) for every token and row, as float64.
template <class Bound>
void expect_gemm_matches_float64(const QuantMatrix &w, const std::vector<float> &x,
                                 const std::vector<float> &out, const float *residual,
                                 const Bound &bound) {
  const int rows = w.rows, cols = w.cols;
  const int n_tokens = static_cast<int>(x.size() / static_cast<size_t>(cols));
  for (int t = 0; t < n_tokens; ++t)
    for (int r = 0; r < rows; ++r) {
      const float *wr = w.decoded.data() + static_cast<size_t>(r) * cols;
      const float *xt = x.data() + static_cast<size_t>(t) * cols;
      const size_t at = static_cast<size_t>(t) * rows + r;
      const double expected = dot(wr, xt, cols) + (residual != nullptr ? residual[at] : 0.0);
      ASSERT_NEAR(out[at], expected, bound(wr, xt, cols))
          << "token " << t << " row " << r << (residual != nullptr ? " with" : " without")
          << " residual";
    }
}

// The tensor-core GEMMs (kernels/matmul_tc.cuh) with their launch geometry:
// 128 rows x 64 tokens per block of 8 warps, tiles in dynamic shared memory. Weights are exact in
// f16, the activations are rounded to f16 (relative error <= 2^-11 each), sums are f32: |y - ref|
// <= 2^-11 * sum |w x| plus f32 accumulation.
struct TensorCoreKernels {
  GgmlType type;
  MatmulKernel gemm;
  SwigluKernel gemm_swiglu;
};
const TensorCoreKernels kTensorCoreTypes[] = {
    {GgmlType::Q1_0, bonsai_gemm_tc_q1_0, bonsai_gemm_swiglu_tc_q1_0},
    {GgmlType::Q2_0, bonsai_gemm_tc_q2_0, bonsai_gemm_swiglu_tc_q2_0},
};
void PrintTo(const TensorCoreKernels &k, std::ostream *out) {
  *out << bonsai::type_name(static_cast<uint32_t>(k.type));
}
emu::Dim3 tensor_core_grid(int rows, int n_tokens) {
  return {static_cast<unsigned>((rows + TC_ROWS - 1) / TC_ROWS),
          static_cast<unsigned>((n_tokens + TC_TOKENS - 1) / TC_TOKENS), 1};
}
constexpr double kHalfInputTol = 1.0 / 2048 + 2e-6;

class TensorCoreGemm : public ::testing::TestWithParam<TensorCoreKernels> {};

TEST_P(TensorCoreGemm, MatchesFloat64WithAndWithoutResidual) {
  const TensorCoreKernels k = GetParam();
  // 140 rows and 70 tokens: two blocks on each axis, the second partial on
  // both; 3 column chunks.
  const int rows = 140, cols = 384, n_tokens = 70;
  const QuantMatrix w = make_matrix(k.type, rows, cols, 61);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 67);
  const std::vector<float> residual = random_floats(static_cast<size_t>(n_tokens) * rows, 71);
  for (const int accumulate : {0, 1}) {
    std::vector<float> y = accumulate ? residual : std::vector<float>(residual.size(), -99.0f);
    emu::launch(tensor_core_grid(rows, n_tokens), TC_THREADS, TC_SHARED_BYTES(1), [&] {
      k.gemm(w.device.data(), x.data(), y.data(), rows, cols, n_tokens, accumulate);
    });
    expect_gemm_matches_float64(w, x, y, accumulate ? residual.data() : nullptr,
                                [](const float *wr, const float *xt, int n) {
                                  return kHalfInputTol * (abs_dot(wr, xt, n) + 1.0);
                                });
  }
}

TEST_P(TensorCoreGemm, WritesNothingOutsideTheOutput) {
  // Rows and tokens past the end of partial tiles must not be written: the
  // output sits inside a larger buffer whose guard values must survive.
  const TensorCoreKernels k = GetParam();
  const int rows = 5, cols = 128, n_tokens = 3;
  const QuantMatrix w = make_matrix(k.type, rows, cols, 73);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 79);
  std::vector<float> buffer(static_cast<size_t>(n_tokens * rows) + 64, 12345.0f);
  emu::launch(tensor_core_grid(rows, n_tokens), TC_THREADS, TC_SHARED_BYTES(1),
              [&] { k.gemm(w.device.data(), x.data(), buffer.data(), rows, cols, n_tokens, 0); });
  for (size_t i = static_cast<size_t>(n_tokens * rows); i < buffer.size(); ++i)
    ASSERT_EQ(buffer[i], 12345.0f) << "guard " << i;
}

TEST_P(TensorCoreGemm, SwigluEpilogueMatchesFloat64) {
  const TensorCoreKernels k = GetParam();
  const int rows = 66, cols = 256, n_tokens = 33;
  const QuantMatrix gate = make_matrix(k.type, rows, cols, 83);
  const QuantMatrix up = make_matrix(k.type, rows, cols, 89);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 97, 0.2f);
  std::vector<float> out(static_cast<size_t>(n_tokens) * rows, -99.0f);
  emu::launch(tensor_core_grid(rows, n_tokens), TC_THREADS, TC_SHARED_BYTES(2), [&] {
    k.gemm_swiglu(gate.device.data(), up.device.data(), x.data(), out.data(), rows, cols, n_tokens);
  });
  for (int t = 0; t < n_tokens; ++t)
    for (int r = 0; r < rows; ++r) {
      const float *xt = x.data() + static_cast<size_t>(t) * cols;
      const float *gr = gate.decoded.data() + static_cast<size_t>(r) * cols;
      const float *ur = up.decoded.data() + static_cast<size_t>(r) * cols;
      const double g = dot(gr, xt, cols), u = dot(ur, xt, cols);
      // silu(g) u moves by at most |d silu/dg| |u| dg + |silu(g)| du, |silu'| <= 1.1.
      const double dg = kHalfInputTol * (abs_dot(gr, xt, cols) + 1.0);
      const double du = kHalfInputTol * (abs_dot(ur, xt, cols) + 1.0);
      const double silu = g / (1.0 + std::exp(-g));
      ASSERT_NEAR(out[t * rows + r], silu * u,
                  1.1 * std::fabs(u) * dg + std::fabs(silu) * du + 1e-6)
          << "token " << t << " row " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, TensorCoreGemm, ::testing::ValuesIn(kTensorCoreTypes),
                         [](const auto &info) {
                           return std::string(
                               bonsai::type_name(static_cast<uint32_t>(info.param.type)));
                         });

// The planar layout, from hand-built GGUF blocks: weight j of a block goes
// to word j / W, bit 8 * (r % 4) + bits * (r / 4) with r = j % W, W = 32 /
// bits; the scales follow all codes.
TEST(PlanarLayout, Q1_0SignBitsMoveToTheirDp4aPlanes) {
  // Two rows of one block each: scale bytes 0x3c00 / 0xc000, one bit set.
  std::vector<u8> gguf(2 * 18, 0);
  gguf[0] = 0x00, gguf[1] = 0x3c;       // row 0: d = 1.0
  gguf[2 + 5 / 8] |= 1 << (5 % 8);      // weight 5: word 0, r 5 -> bit 8 * 1 + 1 = 9
  gguf[18] = 0x00, gguf[19] = 0xc0;     // row 1: d = -2.0
  gguf[20 + 37 / 8] |= 1 << (37 % 8);   // weight 37: word 1, r 5 -> bit 9 of word 1
  gguf[20 + 127 / 8] |= 1 << (127 % 8); // weight 127: word 3, r 31 -> bit 24 + 7 = 31
  std::vector<u8> planar(gguf.size(), 0xee);
  bonsai::cuda::repack_planar({41, gguf.data(), 2, 128}, planar.data());
  std::vector<u8> expected(36, 0);
  expected[1] = 0x02;                       // row 0, word 0, bit 9
  expected[16 + 4 + 1] = 0x02;              // row 1, word 1, bit 9
  expected[16 + 12 + 3] = 0x80;             // row 1, word 3, bit 31
  expected[32] = 0x00, expected[33] = 0x3c; // scale plane: row 0
  expected[34] = 0x00, expected[35] = 0xc0; // row 1
  EXPECT_EQ(planar, expected);
}

TEST(PlanarLayout, Q2_0CodesMoveToTheirDp4aPlanes) {
  std::vector<u8> gguf(34, 0);
  gguf[0] = 0x55, gguf[1] = 0x35;
  gguf[2 + 6 / 4] |= 3 << (2 * (6 % 4));     // weight 6 = code 3: word 0, r 6 -> shift 16 + 2
  gguf[2 + 125 / 4] |= 2 << (2 * (125 % 4)); // weight 125 = code 2: word 7, r 13 -> shift 8 + 6
  std::vector<u8> planar(34, 0xee);
  bonsai::cuda::repack_planar({42, gguf.data(), 1, 128}, planar.data());
  std::vector<u8> expected(34, 0);
  expected[2] = 3 << 2;      // word 0, byte 2, bits 2..3
  expected[28 + 1] = 2 << 6; // word 7, byte 1, bits 6..7
  expected[32] = 0x55, expected[33] = 0x35;
  EXPECT_EQ(planar, expected);
}

// Weight upload repacks chunk by chunk (repack_planar_bytes): any byte range
// must equal those bytes of the whole repack checked by hand above, also
// where a range starts or ends inside a block or straddles the two planes.
TEST(PlanarLayout, AnyByteRangeIsThatRangeOfTheWholeRepack) {
  for (const uint32_t type : {41u, 42u}) {
    const int64_t rows = 7, cols = 384; // 21 blocks
    const size_t block_bytes = type == 41 ? 18 : 34;
    std::vector<u8> gguf(static_cast<size_t>(rows * cols / 128) * block_bytes);
    for (size_t i = 0; i < gguf.size(); ++i)
      gguf[i] = static_cast<u8>((i * 131 + 7) ^ (i >> 3));
    const bonsai::cuda::PlanarSource source{type, gguf.data(), rows, cols};
    std::vector<u8> whole(gguf.size());
    bonsai::cuda::repack_planar(source, whole.data());
    for (const uint64_t chunk : {1u, 5u, 16u, 33u, 100u, 1000u}) {
      std::vector<u8> pieces(gguf.size(), 0xee);
      for (uint64_t offset = 0; offset < pieces.size(); offset += chunk) {
        const uint64_t n = std::min<uint64_t>(chunk, pieces.size() - offset);
        bonsai::cuda::repack_planar_bytes(source, offset, n, pieces.data() + offset);
      }
      EXPECT_EQ(pieces, whole) << "type " << type << ", chunks of " << chunk;
    }
  }
}

// The int8 decode GEMVs (kernels/gemv_dp4a.cuh) with their launch geometry:
// 256 threads, 16 rows per block, 152 bytes of shared memory per 128
// columns. Besides f32 rounding, their only error is the input's rounding
// to int8 with one scale s = max |x| / 127 per 32 values: |x - s q| <= s / 2,
// so |y - ref| <= sum_j |w_j| s_j / 2.
using Dp4aGemvKernel = void (*)(Dp4aTargets, Dp4aInput, int);
using Dp4aSwigluKernel = void (*)(const u8 *, const u8 *, Dp4aInput, float *, int);
struct Dp4aKernels {
  GgmlType type;
  Dp4aGemvKernel gemv;
  Dp4aSwigluKernel gemv_swiglu;
};
const Dp4aKernels kDp4aTypes[] = {
    {GgmlType::Q1_0, bonsai_gemv_dp4a_q1_0, bonsai_gemv_swiglu_dp4a_q1_0},
    {GgmlType::Q2_0, bonsai_gemv_dp4a_q2_0, bonsai_gemv_swiglu_dp4a_q2_0},
};
void PrintTo(const Dp4aKernels &k, std::ostream *out) {
  *out << bonsai::type_name(static_cast<uint32_t>(k.type));
}
unsigned dp4a_blocks(int rows) {
  return static_cast<unsigned>((rows + 15) / 16);
}
size_t dp4a_shared(int cols) {
  return static_cast<size_t>(cols / 128) * 152;
}

// 16-byte units between two tokens' quantized rows (Q8_ROW_STRIDE).
size_t staged_row_stride(int cols) {
  return (dp4a_shared(cols) + 15) / 16;
}

// The input (n_tokens rows of x) as a GEMV gets it: as is, each block
// quantizing its token's row (int8_input=block), or quantized once per token
// by bonsai_quantize_input into `buffer` (int8_input=token); x and norm are
// then withheld from the GEMV, so it can only have read the staged copy.
Dp4aInput as_launched(Dp4aInput in, bool staged, std::vector<U32x4> &buffer,
                      unsigned n_tokens = 1) {
  in.staged = nullptr;
  if (!staged)
    return in;
  buffer.assign(staged_row_stride(in.cols) * n_tokens + 1, U32x4{0, 0, 0, 0});
  emu::launch({n_tokens, 1, 1}, 256, 0, [&] { bonsai_quantize_input(in, buffer.data()); });
  return {nullptr, nullptr, 0.0f, in.cols, buffer.data()};
}
const bool kInputStagings[] = {false, true};

// Launches `gemv` over `matrices` (same width) sharing one input, as the
// plugin does for Q, K and V; one token per grid row.
void run_dp4a_group(Dp4aGemvKernel gemv, const std::vector<const QuantMatrix *> &matrices,
                    const std::vector<float *> &outs, const Dp4aInput &in, int accumulate,
                    unsigned n_tokens = 1) {
  Dp4aTargets targets{};
  targets.n = static_cast<int>(matrices.size());
  unsigned blocks = 0;
  for (size_t m = 0; m < matrices.size(); ++m) {
    targets.w[m] = matrices[m]->device.data();
    targets.out[m] = outs[m];
    targets.rows[m] = matrices[m]->rows;
    targets.first_block[m] = static_cast<int>(blocks);
    blocks += dp4a_blocks(matrices[m]->rows);
  }
  targets.first_block[matrices.size()] = static_cast<int>(blocks);
  emu::launch({blocks, n_tokens, 1}, 256, dp4a_shared(in.cols),
              [&] { gemv(targets, in, accumulate); });
}

// sum_j |w_j| s_j / 2 (+ a little for the f32 sums), the bound above.
double int8_rounding_bound(const float *w, const float *x, int cols) {
  double bound = 0;
  for (int g = 0; g < cols / 32; ++g) {
    double amax = 0, abs_w = 0;
    for (int j = 32 * g; j < 32 * g + 32; ++j) {
      amax = std::max(amax, std::fabs(static_cast<double>(x[j])));
      abs_w += std::fabs(static_cast<double>(w[j]));
    }
    bound += abs_w * amax / 127.0 / 2.0;
  }
  return bound * (1.0 + 1e-5) + kRelTol * (abs_dot(w, x, cols) + 1.0);
}

// x / sqrt(mean(x^2) + eps) * norm in float64, rounded to float.
std::vector<float> rms_normalized(const std::vector<float> &x, const std::vector<float> &norm,
                                  double eps) {
  const double inv = 1.0 / std::sqrt(dot(x.data(), x.data(), static_cast<int>(x.size())) /
                                         static_cast<double>(x.size()) +
                                     eps);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = static_cast<float>(x[i] * inv * norm[i]);
  return out;
}

class Dp4aGemv : public ::testing::TestWithParam<Dp4aKernels> {};

TEST_P(Dp4aGemv, MatchesFloat64WithinTheInt8RoundingBound) {
  const Dp4aKernels k = GetParam();
  // 37 rows: a partial last block (warps with 2, 1 and 0 rows). 2048
  // columns: a Q1_0 row is 16 chunks, so one warp load spans two rows.
  for (const int cols : {128, 640, 2048}) {
    const int rows = 37;
    const QuantMatrix w = make_matrix(k.type, rows, cols, 101 + cols);
    std::vector<float> x = random_floats(cols, 103 + cols);
    for (int j = 32; j < 64; ++j)
      x[j] = 0.0f;       // a group of zeros: scale 0
    x[cols - 1] = 40.0f; // an outlier in the last group
    const std::vector<float> residual = random_floats(rows, 107);
    for (const bool staged : kInputStagings)
      for (const int accumulate : {0, 1}) {
        std::vector<float> y = accumulate ? residual : std::vector<float>(rows, -99.0f);
        std::vector<U32x4> buffer;
        run_dp4a_group(k.gemv, {&w}, {y.data()},
                       as_launched({x.data(), nullptr, 0.0f, cols, nullptr}, staged, buffer),
                       accumulate);
        for (int r = 0; r < rows; ++r) {
          const float *wr = w.decoded.data() + static_cast<size_t>(r) * cols;
          const double expected = dot(wr, x.data(), cols) + (accumulate ? residual[r] : 0.0);
          ASSERT_NEAR(y[r], expected, int8_rounding_bound(wr, x.data(), cols))
              << "cols " << cols << " row " << r << " accumulate " << accumulate << " staged "
              << staged;
        }
      }
  }
}

TEST_P(Dp4aGemv, GroupOfThreeWithFusedRmsNormMatchesFloat64) {
  // Q, K and V in one launch: different row counts, one normalized input.
  const Dp4aKernels k = GetParam();
  const int cols = 256;
  const float eps = 1e-6f;
  const QuantMatrix q = make_matrix(k.type, 37, cols, 139);
  const QuantMatrix kk = make_matrix(k.type, 5, cols, 149);
  const QuantMatrix v = make_matrix(k.type, 16, cols, 151);
  const std::vector<float> x = random_floats(cols, 157, 3.0f);
  const std::vector<float> norm = random_floats(cols, 163);
  const std::vector<float> xn = rms_normalized(x, norm, eps);
  for (const bool staged : kInputStagings) {
    std::vector<float> yq(q.rows + 8, 12345.0f), yk(kk.rows + 8, 12345.0f),
        yv(v.rows + 8, 12345.0f);
    std::vector<U32x4> buffer;
    run_dp4a_group(k.gemv, {&q, &kk, &v}, {yq.data(), yk.data(), yv.data()},
                   as_launched({x.data(), norm.data(), eps, cols, nullptr}, staged, buffer), 0);
    const std::pair<const QuantMatrix *, const std::vector<float> *> outputs[] = {
        {&q, &yq}, {&kk, &yk}, {&v, &yv}};
    for (const auto &[w, y] : outputs) {
      for (int r = 0; r < w->rows; ++r) {
        const float *wr = w->decoded.data() + static_cast<size_t>(r) * cols;
        // The input's own f32 rounding (normalization) adds ~1e-6 relative.
        const double bound =
            int8_rounding_bound(wr, xn.data(), cols) + 1e-5 * abs_dot(wr, xn.data(), cols);
        ASSERT_NEAR((*y)[r], dot(wr, xn.data(), cols), bound)
            << "rows " << w->rows << " row " << r << " staged " << staged;
      }
      for (size_t i = static_cast<size_t>(w->rows); i < y->size(); ++i)
        ASSERT_EQ((*y)[i], 12345.0f) << "guard " << i << " of the " << w->rows << "-row output";
    }
  }
}

TEST_P(Dp4aGemv, SwigluEpilogueMatchesFloat64WithAndWithoutFusedNorm) {
  const Dp4aKernels k = GetParam();
  const int rows = 21, cols = 384;
  const float eps = 1e-6f;
  const QuantMatrix gate = make_matrix(k.type, rows, cols, 127);
  const QuantMatrix up = make_matrix(k.type, rows, cols, 131);
  const std::vector<float> x = random_floats(cols, 137, 0.2f);
  const std::vector<float> norm = random_floats(cols, 139, 0.1f);
  for (const bool staged : kInputStagings)
    for (const bool fused : {false, true}) {
      const std::vector<float> input = fused ? rms_normalized(x, norm, eps) : x;
      std::vector<float> out(rows, -99.0f);
      std::vector<U32x4> buffer;
      const Dp4aInput in = as_launched(
          {x.data(), fused ? norm.data() : nullptr, eps, cols, nullptr}, staged, buffer);
      emu::launch({dp4a_blocks(rows), 1, 1}, 256, dp4a_shared(cols), [&] {
        k.gemv_swiglu(gate.device.data(), up.device.data(), in, out.data(), rows);
      });
      for (int r = 0; r < rows; ++r) {
        const float *gr = gate.decoded.data() + static_cast<size_t>(r) * cols;
        const float *ur = up.decoded.data() + static_cast<size_t>(r) * cols;
        const double g = dot(gr, input.data(), cols), u = dot(ur, input.data(), cols);
        const double dg =
            int8_rounding_bound(gr, input.data(), cols) + 1e-5 * abs_dot(gr, input.data(), cols);
        const double du =
            int8_rounding_bound(ur, input.data(), cols) + 1e-5 * abs_dot(ur, input.data(), cols);
        const double silu = g / (1.0 + std::exp(-g));
        ASSERT_NEAR(out[r], silu * u, 1.1 * (std::fabs(u) + du) * dg + std::fabs(silu) * du + 1e-6)
            << "row " << r << " fused norm " << fused << " staged " << staged;
      }
    }
}

// Several tokens in one launch (grid y = token): each token's rows of the
// input and output, with the input quantized per token into rows
// int8_staging_bytes apart (5 blocks of 128: 760 bytes, so a row starts at
// 768 and the padding matters) or by each block from its own row.
TEST_P(Dp4aGemv, TokensAlongGridYEachMatchFloat64) {
  const Dp4aKernels k = GetParam();
  const int n_tokens = 3, cols = 640, rows_a = 37, rows_b = 5;
  const float eps = 1e-6f;
  ASSERT_EQ(staged_row_stride(cols) * 16, 768u);
  const QuantMatrix a = make_matrix(k.type, rows_a, cols, 211);
  const QuantMatrix b = make_matrix(k.type, rows_b, cols, 223);
  const QuantMatrix up = make_matrix(k.type, rows_a, cols, 227);
  // Tokens of very different sizes: a block that read another token's row
  // (or its norm) would be off by far more than the rounding bound.
  std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 229, 2.0f);
  const float token_scale[n_tokens] = {1.0f, 8.0f, 0.125f};
  for (int t = 0; t < n_tokens; ++t)
    for (int j = 0; j < cols; ++j)
      x[static_cast<size_t>(t) * cols + j] *= token_scale[t];
  const std::vector<float> norm = random_floats(cols, 233);
  std::vector<std::vector<float>> normed(n_tokens);
  for (int t = 0; t < n_tokens; ++t)
    normed[t] = rms_normalized(std::vector<float>(x.begin() + t * cols, x.begin() + (t + 1) * cols),
                               norm, eps);
  const std::vector<float> residual = random_floats(static_cast<size_t>(n_tokens) * rows_a, 239);
  for (const bool staged : kInputStagings) {
    std::vector<U32x4> buffer;
    const Dp4aInput in =
        as_launched({x.data(), norm.data(), eps, cols, nullptr}, staged, buffer, n_tokens);
    // Two targets accumulating: the first into a residual, the second into
    // zeros followed by guards.
    std::vector<float> ya = residual, yb(static_cast<size_t>(n_tokens) * rows_b + 4, 12345.0f);
    std::fill(yb.begin(), yb.begin() + n_tokens * rows_b, 0.0f);
    run_dp4a_group(k.gemv, {&a, &b}, {ya.data(), yb.data()}, in, 1, n_tokens);
    std::vector<float> ff(static_cast<size_t>(n_tokens) * rows_a, -99.0f);
    emu::launch({dp4a_blocks(rows_a), n_tokens, 1}, 256, dp4a_shared(cols),
                [&] { k.gemv_swiglu(a.device.data(), up.device.data(), in, ff.data(), rows_a); });
    for (int t = 0; t < n_tokens; ++t) {
      const float *xt = normed[t].data();
      const auto bound = [&](const float *wr) {
        return int8_rounding_bound(wr, xt, cols) + 1e-5 * abs_dot(wr, xt, cols);
      };
      for (int r = 0; r < rows_a; ++r) {
        const float *wr = a.decoded.data() + static_cast<size_t>(r) * cols;
        const float *ur = up.decoded.data() + static_cast<size_t>(r) * cols;
        const size_t at = static_cast<size_t>(t) * rows_a + r;
        ASSERT_NEAR(ya[at], residual[at] + dot(wr, xt, cols), bound(wr))
            << "token " << t << " row " << r << " staged " << staged;
        const double g = dot(wr, xt, cols), u = dot(ur, xt, cols);
        const double silu = g / (1.0 + std::exp(-g));
        ASSERT_NEAR(ff[at], silu * u,
                    1.1 * (std::fabs(u) + bound(ur)) * bound(wr) + std::fabs(silu) * bound(ur) +
                        1e-6)
            << "swiglu token " << t << " row " << r << " staged " << staged;
      }
      for (int r = 0; r < rows_b; ++r) {
        const float *wr = b.decoded.data() + static_cast<size_t>(r) * cols;
        ASSERT_NEAR(yb[static_cast<size_t>(t) * rows_b + r], dot(wr, xt, cols), bound(wr))
            << "second target token " << t << " row " << r << " staged " << staged;
      }
    }
    for (size_t i = static_cast<size_t>(n_tokens) * rows_b; i < yb.size(); ++i)
      ASSERT_EQ(yb[i], 12345.0f) << "guard " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Dp4aGemv, ::testing::ValuesIn(kDp4aTypes), [](const auto &info) {
  return std::string(bonsai::type_name(static_cast<uint32_t>(info.param.type)));
});

// The int8 tensor-core GEMMs (kernels/matmul_mmq.cuh) after
// bonsai_quantize_rows, with their launch geometry: 128 rows x 64 tokens per
// block of 8 warps, two cp.async stages in dynamic shared memory. The
// emulator lands a cp.async copy only when its thread waits for it and runs
// mma.m16n8k32 on each lane's registers in the PTX ISA's layout. Weights are
// exact in int8, so the only error beyond f32 sums is the activations' int8
// rounding, the GEMV's bound.
using MmqKernel = void (*)(const u8 *, const u8 *, float *, int, int, int, int);
using MmqSwigluKernel = void (*)(const u8 *, const u8 *, const u8 *, float *, int, int, int);
struct MmqKernels {
  GgmlType type;
  MmqKernel gemm;
  MmqSwigluKernel gemm_swiglu;
};
const MmqKernels kMmqTypes[] = {
    {GgmlType::Q1_0, bonsai_gemm_mmq_q1_0, bonsai_gemm_swiglu_mmq_q1_0},
    {GgmlType::Q2_0, bonsai_gemm_mmq_q2_0, bonsai_gemm_swiglu_mmq_q2_0},
};
// The dynamic shared bytes of a launch for n_mats matrices of k's type.
size_t mmq_shared(const MmqKernels &k, int n_mats) {
  return MMQ_SHARED_BYTES(bonsai::cuda::planar_code_bytes(static_cast<uint32_t>(k.type)), n_mats);
}
void PrintTo(const MmqKernels &k, std::ostream *out) {
  *out << bonsai::type_name(static_cast<uint32_t>(k.type));
}

// n_tokens rows of x as bonsai_quantize_rows leaves them (one block each).
std::vector<U32x4> quantized_rows(const std::vector<float> &x, int cols, int n_tokens) {
  std::vector<U32x4> staged((static_cast<size_t>(n_tokens) * Q8_ROW_BYTES(cols) + 15) / 16);
  emu::launch({static_cast<unsigned>(n_tokens), 1, 1}, 256, 0,
              [&] { bonsai_quantize_rows(x.data(), cols, n_tokens, staged.data()); });
  return staged;
}
emu::Dim3 mmq_grid(int rows, int n_tokens) {
  return {static_cast<unsigned>((rows + MMQ_ROWS - 1) / MMQ_ROWS),
          static_cast<unsigned>((n_tokens + MMQ_TOKENS - 1) / MMQ_TOKENS), 1};
}

class Int8TensorCoreGemm : public ::testing::TestWithParam<MmqKernels> {};

TEST_P(Int8TensorCoreGemm, MatchesFloat64WithinTheInt8RoundingBound) {
  const MmqKernels k = GetParam();
  // 140 rows and 70 tokens: two blocks on each axis, the second partial on
  // both; 3 weight blocks per row: the two stages each refilled.
  const int rows = 140, cols = 384, n_tokens = 70;
  const QuantMatrix w = make_matrix(k.type, rows, cols, 131);
  std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 137);
  for (int j = 32; j < 64; ++j)
    x[j] = 0.0f;                                       // token 0: a group of zeros, scale 0
  x[static_cast<size_t>(n_tokens) * cols - 1] = 40.0f; // last token: an outlier
  const std::vector<U32x4> xq = quantized_rows(x, cols, n_tokens);
  const std::vector<float> residual = random_floats(static_cast<size_t>(n_tokens) * rows, 139);
  for (const int accumulate : {0, 1}) {
    std::vector<float> y = accumulate ? residual : std::vector<float>(residual.size(), -99.0f);
    emu::launch(mmq_grid(rows, n_tokens), MMQ_THREADS, mmq_shared(k, 1), [&] {
      k.gemm(w.device.data(), reinterpret_cast<const u8 *>(xq.data()), y.data(), rows, cols,
             n_tokens, accumulate);
    });
    expect_gemm_matches_float64(w, x, y, accumulate ? residual.data() : nullptr,
                                [accumulate](const float *wr, const float *xt, int n) {
                                  return int8_rounding_bound(wr, xt, n) + (accumulate ? 1e-5 : 0.0);
                                });
  }
}

TEST_P(Int8TensorCoreGemm, WritesNothingOutsideTheOutput) {
  const MmqKernels k = GetParam();
  const int rows = 5, cols = 128, n_tokens = 3;
  const QuantMatrix w = make_matrix(k.type, rows, cols, 149);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 151);
  const std::vector<U32x4> xq = quantized_rows(x, cols, n_tokens);
  std::vector<float> buffer(static_cast<size_t>(n_tokens * rows) + 64, 12345.0f);
  emu::launch(mmq_grid(rows, n_tokens), MMQ_THREADS, mmq_shared(k, 1), [&] {
    k.gemm(w.device.data(), reinterpret_cast<const u8 *>(xq.data()), buffer.data(), rows, cols,
           n_tokens, 0);
  });
  for (size_t i = 0; i < static_cast<size_t>(n_tokens * rows); ++i)
    ASSERT_NE(buffer[i], 12345.0f) << "output " << i << " never written";
  for (size_t i = static_cast<size_t>(n_tokens * rows); i < buffer.size(); ++i)
    ASSERT_EQ(buffer[i], 12345.0f) << "guard " << i;
}

TEST_P(Int8TensorCoreGemm, SwigluEpilogueMatchesFloat64) {
  const MmqKernels k = GetParam();
  const int rows = 66, cols = 256, n_tokens = 33;
  const QuantMatrix gate = make_matrix(k.type, rows, cols, 157);
  const QuantMatrix up = make_matrix(k.type, rows, cols, 163);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_tokens) * cols, 167, 0.2f);
  const std::vector<U32x4> xq = quantized_rows(x, cols, n_tokens);
  std::vector<float> out(static_cast<size_t>(n_tokens) * rows, -99.0f);
  emu::launch(mmq_grid(rows, n_tokens), MMQ_THREADS, mmq_shared(k, 2), [&] {
    k.gemm_swiglu(gate.device.data(), up.device.data(), reinterpret_cast<const u8 *>(xq.data()),
                  out.data(), rows, cols, n_tokens);
  });
  for (int t = 0; t < n_tokens; ++t)
    for (int r = 0; r < rows; ++r) {
      const float *xt = x.data() + static_cast<size_t>(t) * cols;
      const float *gr = gate.decoded.data() + static_cast<size_t>(r) * cols;
      const float *ur = up.decoded.data() + static_cast<size_t>(r) * cols;
      const double g = dot(gr, xt, cols), u = dot(ur, xt, cols);
      const double dg = int8_rounding_bound(gr, xt, cols), du = int8_rounding_bound(ur, xt, cols);
      const double silu = g / (1.0 + std::exp(-g));
      // silu(g) u moves by at most 1.1 |u| dg + |silu(g)| du + 1.1 dg du.
      ASSERT_NEAR(out[t * rows + r], silu * u,
                  1.1 * std::fabs(u) * dg + std::fabs(silu) * du + 1.1 * dg * du + 1e-6)
          << "token " << t << " row " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, Int8TensorCoreGemm, ::testing::ValuesIn(kMmqTypes),
                         [](const auto &info) {
                           return std::string(
                               bonsai::type_name(static_cast<uint32_t>(info.param.type)));
                         });

TEST(HalfConversion, RoundsToNearestEvenLikeCvtRnF16F32) {
  // Hand-picked values around the rounding points of binary16.
  EXPECT_EQ(emu::float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(emu::float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(emu::float_to_half_bits(1.0f + 1.0f / 2048), 0x3c00); // tie -> even (down)
  EXPECT_EQ(emu::float_to_half_bits(1.0f + 3.0f / 2048), 0x3c02); // tie -> even (up)
  EXPECT_EQ(emu::float_to_half_bits(1.0f + 1.5f / 2048), 0x3c01); // above the tie
  EXPECT_EQ(emu::float_to_half_bits(65504.0f), 0x7bff);           // largest half
  EXPECT_EQ(emu::float_to_half_bits(65520.0f), 0x7c00);           // rounds up to inf
  EXPECT_EQ(emu::float_to_half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(emu::float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(emu::float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(emu::float_to_half_bits(std::ldexp(1.0f, -26)), 0x0000); // underflows to 0
  EXPECT_EQ(emu::float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(emu::float_to_half_bits(NAN) & 0x7e00, 0x7e00);
  // Every half survives the round trip.
  for (uint32_t h = 0; h < 0x7c00; ++h)
    ASSERT_EQ(emu::float_to_half_bits(emu::half_bits_to_float(static_cast<uint16_t>(h))), h) << h;
}

TEST(LayerKernels, RmsnormMatchesFloat64) {
  const int n = 200, n_tokens = 3;
  const float eps = 1e-6f;
  const std::vector<float> x = random_floats(static_cast<size_t>(n) * n_tokens, 51, 3.0f);
  const std::vector<float> weight = random_floats(n, 53);
  std::vector<float> out(x.size());
  emu::launch({n_tokens, 1, 1}, 256, 0,
              [&] { bonsai_rmsnorm(x.data(), weight.data(), out.data(), n, eps); });
  for (int t = 0; t < n_tokens; ++t) {
    const double ms = dot(x.data() + t * n, x.data() + t * n, n) / n;
    for (int c = 0; c < n; ++c) {
      const double expected = x[t * n + c] / std::sqrt(ms + eps) * weight[c];
      EXPECT_NEAR(out[t * n + c], expected, 1e-5 * (std::fabs(expected) + 1e-3));
    }
  }
}

// Float64 per-head RMSNorm + NEOX RoPE of one head vector, turning its
// first n_rot values (all when 0) at rates base^(-2i/n_rot).
std::vector<double> norm_rope(const float *v, const float *norm, int hd, int pos, double eps,
                              double base, int n_rot = 0) {
  const int rot = n_rot == 0 ? hd : n_rot;
  double ms = 0;
  for (int i = 0; i < hd; ++i)
    ms += static_cast<double>(v[i]) * v[i];
  ms /= hd;
  std::vector<double> n(hd), out(hd);
  for (int i = 0; i < hd; ++i)
    n[i] = out[i] = v[i] / std::sqrt(ms + eps) * norm[i];
  for (int i = 0; i < rot / 2; ++i) {
    const double theta = pos * std::pow(base, -2.0 * i / rot);
    out[i] = n[i] * std::cos(theta) - n[i + rot / 2] * std::sin(theta);
    out[i + rot / 2] = n[i] * std::sin(theta) + n[i + rot / 2] * std::cos(theta);
  }
  return out;
}

TEST(LayerKernels, QkNormRopeRotatesQueriesAndStoresKeysAndValuesAtTheirPositions) {
  const int n_head = 4, n_kv = 2, hd = 16, max_ctx = 40, n_tokens = 3, kv_length = 29;
  const float eps = 1e-6f, base = 1e6f;
  std::vector<float> q = random_floats(static_cast<size_t>(n_tokens) * n_head * hd, 61);
  const std::vector<float> q_in = q;
  const std::vector<float> k = random_floats(static_cast<size_t>(n_tokens) * n_kv * hd, 67);
  const std::vector<float> v = random_floats(k.size(), 71);
  const std::vector<float> q_norm = random_floats(hd, 73), k_norm = random_floats(hd, 79);
  std::vector<float> k_cache(static_cast<size_t>(n_kv) * max_ctx * hd, 0.0f);
  std::vector<float> v_cache(k_cache.size(), 0.0f);
  const int step_info[2] = {kv_length, n_tokens};
  std::vector<double> rates(hd / 2); // plain RoPE: the host passes base^(-2i/hd)
  for (int i = 0; i < hd / 2; ++i)
    rates[static_cast<size_t>(i)] = std::pow(static_cast<double>(base), -2.0 * i / hd);
  emu::launch({n_head + n_kv, n_tokens, 1}, 32, hd * sizeof(float), [&] {
    bonsai_qk_norm_rope(q.data(), hd, q.data(), k.data(), v.data(), q_norm.data(), k_norm.data(),
                        k_cache.data(), v_cache.data(), step_info, n_head, n_kv, hd, hd, max_ctx,
                        eps, rates.data(), 1.0f);
  });
  for (int t = 0; t < n_tokens; ++t) {
    const int pos = kv_length + t;
    for (int h = 0; h < n_head; ++h) {
      const auto expected =
          norm_rope(q_in.data() + (t * n_head + h) * hd, q_norm.data(), hd, pos, eps, base);
      for (int i = 0; i < hd; ++i)
        EXPECT_NEAR(q[(t * n_head + h) * hd + i], expected[i], 2e-5) << "q t" << t << " h" << h;
    }
    for (int h = 0; h < n_kv; ++h) {
      const auto expected =
          norm_rope(k.data() + (t * n_kv + h) * hd, k_norm.data(), hd, pos, eps, base);
      for (int i = 0; i < hd; ++i) {
        const size_t at = (static_cast<size_t>(h) * max_ctx + pos) * hd + i;
        EXPECT_NEAR(k_cache[at], expected[i], 2e-5) << "k t" << t << " h" << h;
        EXPECT_EQ(v_cache[at], v[(t * n_kv + h) * hd + i]);
      }
    }
  }
  // Nothing else in the cache was touched.
  for (int h = 0; h < n_kv; ++h)
    for (int p = 0; p < max_ctx; ++p)
      if (p < kv_length || p >= kv_length + n_tokens) {
        for (int i = 0; i < hd; ++i)
          ASSERT_EQ(k_cache[(static_cast<size_t>(h) * max_ctx + p) * hd + i], 0.0f);
      }
}

// qwen35's gated attention: queries read from the interleaved projection
// (each head's query, then its gate: a head stride of 2 * head_dim) into
// compact rows, RoPE on the first n_rot values only, the rest normed and
// unturned; keys likewise into the cache.
TEST(LayerKernels, QkNormRopeTurnsTheFirstNRotValuesOfInterleavedQueries) {
  const int n_head = 2, n_kv = 1, hd = 32, n_rot = 8, max_ctx = 16, n_tokens = 2, kv_length = 7;
  const float eps = 1e-6f, base = 1e7f;
  const std::vector<float> query_gate =
      random_floats(static_cast<size_t>(n_tokens) * n_head * 2 * hd, 83);
  std::vector<float> q(static_cast<size_t>(n_tokens) * n_head * hd, 0.0f);
  const std::vector<float> k = random_floats(static_cast<size_t>(n_tokens) * n_kv * hd, 89);
  const std::vector<float> v = random_floats(k.size(), 97);
  const std::vector<float> q_norm = random_floats(hd, 101), k_norm = random_floats(hd, 103);
  std::vector<float> k_cache(static_cast<size_t>(n_kv) * max_ctx * hd, 0.0f);
  std::vector<float> v_cache(k_cache.size(), 0.0f);
  const int step_info[2] = {kv_length, n_tokens};
  std::vector<double> rates(n_rot / 2);
  for (int i = 0; i < n_rot / 2; ++i)
    rates[static_cast<size_t>(i)] = std::pow(static_cast<double>(base), -2.0 * i / n_rot);
  emu::launch({n_head + n_kv, n_tokens, 1}, 32, hd * sizeof(float), [&] {
    bonsai_qk_norm_rope(query_gate.data(), 2 * hd, q.data(), k.data(), v.data(), q_norm.data(),
                        k_norm.data(), k_cache.data(), v_cache.data(), step_info, n_head, n_kv, hd,
                        n_rot, max_ctx, eps, rates.data(), 1.0f);
  });
  for (int t = 0; t < n_tokens; ++t) {
    const int pos = kv_length + t;
    for (int h = 0; h < n_head; ++h) {
      const float *query = query_gate.data() + (t * n_head + h) * 2 * hd;
      const auto expected = norm_rope(query, q_norm.data(), hd, pos, eps, base, n_rot);
      for (int i = 0; i < hd; ++i)
        EXPECT_NEAR(q[(t * n_head + h) * hd + i], expected[i], 2e-5) << "q t" << t << " h" << h;
    }
    const auto expected = norm_rope(k.data() + t * hd, k_norm.data(), hd, pos, eps, base, n_rot);
    for (int i = 0; i < hd; ++i) {
      EXPECT_NEAR(k_cache[static_cast<size_t>(pos) * hd + i], expected[i], 2e-5) << "k t" << t;
      EXPECT_EQ(v_cache[static_cast<size_t>(pos) * hd + i], v[t * hd + i]);
    }
  }
}

// attn[t][h] *= sigmoid(gate of head h), the gates being the odd runs of the
// interleaved projection.
TEST(LayerKernels, SigmoidGateScalesEachHeadByItsOwnGate) {
  const int n_head = 3, hd = 40, n_tokens = 2;
  std::vector<float> attn = random_floats(static_cast<size_t>(n_tokens) * n_head * hd, 107);
  const std::vector<float> before = attn;
  const std::vector<float> query_gate =
      random_floats(static_cast<size_t>(n_tokens) * n_head * 2 * hd, 109, 3.0f);
  emu::launch({n_head, n_tokens, 1}, 64, 0,
              [&] { bonsai_sigmoid_gate(attn.data(), query_gate.data(), n_head, hd); });
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < n_head; ++h)
      for (int i = 0; i < hd; ++i) {
        const double gate = query_gate[((t * n_head + h) * 2 + 1) * hd + i];
        const double want = before[(t * n_head + h) * hd + i] / (1.0 + std::exp(-gate));
        EXPECT_NEAR(attn[(t * n_head + h) * hd + i], want, 1e-6 * (std::fabs(want) + 1.0));
      }
}

// The f16 cache: keys are the f32 results rounded to the nearest f16 (so
// within half an f16 ulp, 2^-11 relative, of the float64 value plus the f32
// error), values the f16 rounding of the inputs, queries as in f32.
TEST(LayerKernels, QkNormRopeF16StoresKeysAndValuesRoundedToHalf) {
  const int n_head = 2, n_kv = 1, hd = 32, max_ctx = 8, n_tokens = 2, kv_length = 5;
  const float eps = 1e-6f, base = 1e6f;
  std::vector<float> q = random_floats(static_cast<size_t>(n_tokens) * n_head * hd, 61);
  const std::vector<float> k = random_floats(static_cast<size_t>(n_tokens) * n_kv * hd, 67);
  const std::vector<float> v = random_floats(k.size(), 71);
  const std::vector<float> q_norm = random_floats(hd, 73), k_norm = random_floats(hd, 79);
  std::vector<uint16_t> k_cache(static_cast<size_t>(n_kv) * max_ctx * hd, 0x7e00); // NaN
  std::vector<uint16_t> v_cache(k_cache.size(), 0x7e00);
  const int step_info[2] = {kv_length, n_tokens};
  std::vector<double> rates(hd / 2);
  for (int i = 0; i < hd / 2; ++i)
    rates[static_cast<size_t>(i)] = std::pow(static_cast<double>(base), -2.0 * i / hd);
  emu::launch({n_head + n_kv, n_tokens, 1}, 32, hd * sizeof(float), [&] {
    bonsai_qk_norm_rope_f16(q.data(), hd, q.data(), k.data(), v.data(), q_norm.data(),
                            k_norm.data(), k_cache.data(), v_cache.data(), step_info, n_head, n_kv,
                            hd, hd, max_ctx, eps, rates.data(), 1.0f);
  });
  for (int t = 0; t < n_tokens; ++t) {
    const int pos = kv_length + t;
    const auto expected =
        norm_rope(k.data() + static_cast<size_t>(t) * n_kv * hd, k_norm.data(), hd, pos, eps, base);
    for (int i = 0; i < hd; ++i) {
      const size_t at = static_cast<size_t>(pos) * hd + i;
      EXPECT_NEAR(emu::half_bits_to_float(k_cache[at]), expected[i],
                  std::fabs(expected[i]) / 2048 + 2e-5)
          << "k t" << t << " dim " << i;
      EXPECT_EQ(v_cache[at], emu::float_to_half_bits(v[static_cast<size_t>(t) * hd + i]));
    }
  }
  for (int p = 0; p < max_ctx; ++p) { // nothing outside the step's positions
    if (p >= kv_length && p < kv_length + n_tokens)
      continue;
    for (int i = 0; i < hd; ++i)
      ASSERT_EQ(k_cache[static_cast<size_t>(p) * hd + i], 0x7e00);
  }
}

// The caches as f16 bits for the _f16 kernels; with `round` the f32 caches
// become the rounded values too, so a float64 reference reads what they read.
struct HalfCaches {
  std::vector<uint16_t> k, v;
};
HalfCaches half_caches(std::vector<float> &k_cache, std::vector<float> &v_cache, bool round) {
  HalfCaches half{std::vector<uint16_t>(k_cache.size()), std::vector<uint16_t>(v_cache.size())};
  for (size_t i = 0; i < k_cache.size(); ++i) {
    half.k[i] = emu::float_to_half_bits(k_cache[i]);
    half.v[i] = emu::float_to_half_bits(v_cache[i]);
    if (round) {
      k_cache[i] = emu::half_bits_to_float(half.k[i]);
      v_cache[i] = emu::half_bits_to_float(half.v[i]);
    }
  }
  return half;
}

// Causal softmax attention in float64 for the step's tokens [0, n_tokens)
// after kv_length cached positions: out[t][head][i], the caches laid out
// [kv_head][max_ctx][head_dim] as the kernels read them.
struct AttentionShape {
  int kv_length, n_tokens, n_head, n_kv, head_dim, max_ctx;
};
std::vector<double> reference_attention(const AttentionShape &a, const std::vector<float> &q,
                                        const std::vector<float> &k_cache,
                                        const std::vector<float> &v_cache) {
  const int hd = a.head_dim;
  std::vector<double> out(static_cast<size_t>(a.n_tokens) * a.n_head * hd);
  for (int t = 0; t < a.n_tokens; ++t)
    for (int h = 0; h < a.n_head; ++h) {
      const int kvh = h / (a.n_head / a.n_kv);
      const int visible = a.kv_length + t + 1;
      std::vector<double> scores(static_cast<size_t>(visible));
      double max_score = -1e300;
      for (int j = 0; j < visible; ++j) {
        scores[j] = dot(q.data() + (static_cast<size_t>(t) * a.n_head + h) * hd,
                        k_cache.data() + (static_cast<size_t>(kvh) * a.max_ctx + j) * hd, hd) /
                    std::sqrt(static_cast<double>(hd));
        max_score = std::max(max_score, scores[j]);
      }
      double total = 0;
      for (double &score : scores)
        total += (score = std::exp(score - max_score));
      for (int i = 0; i < hd; ++i) {
        double sum = 0;
        for (int j = 0; j < visible; ++j)
          sum += scores[j] / total * v_cache[(static_cast<size_t>(kvh) * a.max_ctx + j) * hd + i];
        out[(static_cast<size_t>(t) * a.n_head + h) * hd + i] = sum;
      }
    }
  return out;
}

struct AttentionCase {
  int kv_length, n_tokens, n_splits;
  bool warps;        // bonsai_attention_split_warps instead of bonsai_attention_split
  int head_dim = 24; // 24: lanes 24..31 idle; 100 and 128 use all four dimensions per lane
  int n_head = 4, n_kv = 2;
  bool f16 = false;  // the _f16 kernels on an f16 cache
  bool wide = false; // with warps: the wide form (heads up to 256, groups up to 8)
};

void PrintTo(const AttentionCase &c, std::ostream *out) {
  *out << (c.warps ? (c.wide ? "wide warps" : "warps") : "block") << " kv " << c.kv_length
       << " tokens " << c.n_tokens << " splits " << c.n_splits << " head_dim " << c.head_dim
       << " heads " << c.n_head << "/" << c.n_kv << (c.f16 ? " f16" : "");
}

class SplitAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(SplitAttention, MatchesCausalSoftmaxAttentionWithGroupedHeads) {
  const AttentionCase c = GetParam();
  const int n_head = c.n_head, n_kv = c.n_kv, hd = c.head_dim;
  const int max_ctx = c.kv_length + c.n_tokens + 3; // room past the step's end, never read
  const std::vector<float> q = random_floats(static_cast<size_t>(c.n_tokens) * n_head * hd, 83);
  std::vector<float> k_cache = random_floats(static_cast<size_t>(n_kv) * max_ctx * hd, 89);
  std::vector<float> v_cache = random_floats(k_cache.size(), 97);
  // The f16 kernels read the same caches rounded to f16; the float64
  // reference below reads the rounded values too.
  const HalfCaches half = half_caches(k_cache, v_cache, c.f16);
  const std::vector<uint16_t> &k_half = half.k, &v_half = half.v;
  const int step_info[2] = {c.kv_length, c.n_tokens};
  const size_t partials = static_cast<size_t>(c.n_tokens) * n_head * c.n_splits;
  std::vector<float> part_ml(2 * partials), part_acc(partials * hd);
  std::vector<float> out(static_cast<size_t>(c.n_tokens) * n_head * hd, -99.0f);
  // The warp kernel takes one block per KV head (its query heads together).
  const emu::Dim3 grid = {static_cast<unsigned>(c.warps ? n_kv : n_head),
                          static_cast<unsigned>(c.n_tokens), static_cast<unsigned>(c.n_splits)};
  if (c.wide && c.f16)
    emu::launch(grid, 32 * ATTN_WARPS, 0, [&] {
      bonsai_attention_split_warps_wide_f16(q.data(), k_half.data(), v_half.data(), part_ml.data(),
                                            part_acc.data(), step_info, n_head, n_kv, hd, max_ctx);
    });
  else if (c.wide)
    emu::launch(grid, 32 * ATTN_WARPS, 0, [&] {
      bonsai_attention_split_warps_wide(q.data(), k_cache.data(), v_cache.data(), part_ml.data(),
                                        part_acc.data(), step_info, n_head, n_kv, hd, max_ctx);
    });
  else if (c.warps && c.f16)
    emu::launch(grid, 32 * ATTN_WARPS, 0, [&] {
      bonsai_attention_split_warps_f16(q.data(), k_half.data(), v_half.data(), part_ml.data(),
                                       part_acc.data(), step_info, n_head, n_kv, hd, max_ctx);
    });
  else if (c.f16)
    emu::launch(grid, static_cast<unsigned>((hd + 31) / 32 * 32), 0, [&] {
      bonsai_attention_split_f16(q.data(), k_half.data(), v_half.data(), part_ml.data(),
                                 part_acc.data(), step_info, n_head, n_kv, hd, max_ctx);
    });
  else if (c.warps)
    emu::launch(grid, 32 * ATTN_WARPS, 0, [&] {
      bonsai_attention_split_warps(q.data(), k_cache.data(), v_cache.data(), part_ml.data(),
                                   part_acc.data(), step_info, n_head, n_kv, hd, max_ctx);
    });
  else
    emu::launch(grid, static_cast<unsigned>((hd + 31) / 32 * 32), 0, [&] {
      bonsai_attention_split(q.data(), k_cache.data(), v_cache.data(), part_ml.data(),
                             part_acc.data(), step_info, n_head, n_kv, hd, max_ctx);
    });
  // The last token's keys are spread evenly over the splits (shared out by
  // the step's length, not by max_ctx): as many splits hold keys as there
  // are keys, up to all of them.
  const int n_keys_last = c.kv_length + c.n_tokens;
  for (int h = 0; h < n_head; ++h) {
    int splits_with_keys = 0;
    for (int split = 0; split < c.n_splits; ++split)
      splits_with_keys +=
          part_ml[2 * ((static_cast<size_t>(c.n_tokens - 1) * n_head + h) * c.n_splits + split) +
                  1] > 0.0f;
    EXPECT_EQ(splits_with_keys, std::min(c.n_splits, n_keys_last)) << "head " << h;
  }
  const unsigned merge_threads = static_cast<unsigned>((hd + 31) / 32 * 32); // one per dimension
  emu::launch(
      {static_cast<unsigned>(n_head), static_cast<unsigned>(c.n_tokens), 1}, merge_threads, 0, [&] {
        bonsai_attention_merge(part_ml.data(), part_acc.data(), out.data(), n_head, hd, c.n_splits);
      });
  const std::vector<double> expected = reference_attention(
      {c.kv_length, c.n_tokens, n_head, n_kv, hd, max_ctx}, q, k_cache, v_cache);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(out[i], expected[i], 2e-5)
        << "token " << i / (n_head * hd) << " head " << i / hd % n_head << " dim " << i % hd;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SplitAttention,
    ::testing::Values(AttentionCase{0, 1, 1, false},  // first token: a single key
                      AttentionCase{0, 1, 8, false},  // one key, seven empty splits
                      AttentionCase{20, 1, 8, false}, // decode: 21 keys over 8 splits
                      AttentionCase{0, 5, 16, false}, // prefill from empty, causal mask
                      AttentionCase{37, 4, 4, false}, // prefill after a cached prefix
                      AttentionCase{0, 1, 1, true},   // the same five, warp kernel
                      AttentionCase{0, 1, 8, true}, AttentionCase{20, 1, 8, true},
                      AttentionCase{0, 5, 16, true}, AttentionCase{37, 4, 4, true},
                      AttentionCase{30, 1, 16, true, 100},       // 31 keys, partial dimension group
                      AttentionCase{37, 4, 4, true, 128},        // full 128-dimension heads
                      AttentionCase{4096, 1, 16, true, 24},      // 4,097 keys, uneven last chunk
                      AttentionCase{30, 2, 16, false, 24, 8, 1}, // 8 query heads on one KV head
                      AttentionCase{20, 1, 8, true, 128, 8, 2},  // 4 per KV head (Qwen3 4B/8B)
                      AttentionCase{30, 2, 5, false, 24, 6, 3},
                      AttentionCase{37, 4, 4, true, 128, 4, 2, true}, // f16 cache, both kernels
                      AttentionCase{20, 1, 8, false, 24, 4, 2, true},
                      // The wide form: qwen35's heads of 256, 6 per KV head (decode); an f16
                      // cache with 8 per KV head and lanes partly idle; a small head.
                      AttentionCase{20, 1, 8, true, 256, 12, 2, false, true},
                      AttentionCase{11, 3, 4, true, 200, 16, 2, true, true},
                      AttentionCase{5, 2, 2, true, 64, 8, 4, false, true}));

// Prefill attention on f16 tensor cores (bonsai_attention_tc): one launch
// per sequence step, 64 tokens per block, mma.m16n8k16 emulated lane by lane
// in the PTX ISA's fragment layout.
struct TcAttentionCase {
  int kv_length, n_tokens, head_dim, n_head, n_kv;
  bool f16 = false;
};

void PrintTo(const TcAttentionCase &c, std::ostream *out) {
  *out << "kv " << c.kv_length << " tokens " << c.n_tokens << " head_dim " << c.head_dim
       << " heads " << c.n_head << "/" << c.n_kv << (c.f16 ? " f16" : "");
}

class TensorCoreAttention : public ::testing::TestWithParam<TcAttentionCase> {};

TEST_P(TensorCoreAttention, MatchesCausalSoftmaxAttentionToF32Rounding) {
  const TcAttentionCase c = GetParam();
  const int n_head = c.n_head, n_kv = c.n_kv, hd = c.head_dim;
  const int n_keys = c.kv_length + c.n_tokens;
  const int max_ctx = n_keys + 5;
  const std::vector<float> q = random_floats(static_cast<size_t>(c.n_tokens) * n_head * hd, 7);
  std::vector<float> k_cache = random_floats(static_cast<size_t>(n_kv) * max_ctx * hd, 11);
  std::vector<float> v_cache = random_floats(k_cache.size(), 13);
  // Past the step's last key the cache is never read: NaN there would show.
  for (int h = 0; h < n_kv; ++h)
    for (int j = n_keys; j < max_ctx; ++j)
      for (int i = 0; i < hd; ++i) {
        const size_t at = (static_cast<size_t>(h) * max_ctx + j) * hd + i;
        k_cache[at] = v_cache[at] = std::nanf("");
      }
  // The f16 kernels read the same caches rounded to f16; the float64
  // reference below reads the rounded values too.
  const HalfCaches half = half_caches(k_cache, v_cache, c.f16);
  const std::vector<uint16_t> &k_half = half.k, &v_half = half.v;
  const int step_info[2] = {c.kv_length, c.n_tokens};
  std::vector<float> out(static_cast<size_t>(c.n_tokens) * n_head * hd, -99.0f);
  const emu::Dim3 grid = {static_cast<unsigned>(n_head),
                          static_cast<unsigned>((c.n_tokens + ATC_TOKENS - 1) / ATC_TOKENS), 1};
  const size_t shared =
      ATC_SHARED_TILES * ATC_KEYS * static_cast<size_t>(hd + ATC_PAD) * sizeof(uint16_t);
  if (c.f16)
    emu::launch(grid, 32 * ATC_WARPS, shared, [&] {
      bonsai_attention_tc_f16(q.data(), k_half.data(), v_half.data(), out.data(), step_info, n_head,
                              n_kv, hd, max_ctx);
    });
  else
    emu::launch(grid, 32 * ATC_WARPS, shared, [&] {
      bonsai_attention_tc(q.data(), k_cache.data(), v_cache.data(), out.data(), step_info, n_head,
                          n_kv, hd, max_ctx);
    });
  // float64 attention over the same inputs. The kernel splits q, k, v and
  // the probabilities into an f16 and what f16 leaves, so its products are
  // exact to f32 rounding: the bound of the CUDA-core kernels holds.
  const std::vector<double> expected = reference_attention(
      {c.kv_length, c.n_tokens, n_head, n_kv, hd, max_ctx}, q, k_cache, v_cache);
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out[i])) << "output " << i;
    worst = std::max(worst, std::abs(out[i] - expected[i]));
    EXPECT_NEAR(out[i], expected[i], 2e-5)
        << "token " << i / (n_head * hd) << " head " << i / hd % n_head << " dim " << i % hd;
  }
  std::printf("[ attention_tc ] %d tokens after %d, head_dim %d%s: max |error| %.2e\n", c.n_tokens,
              c.kv_length, hd, c.f16 ? ", f16 cache" : "", worst);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TensorCoreAttention,
    ::testing::Values(TcAttentionCase{0, 9, 16, 2, 1},    // shortest step, one key tile
                      TcAttentionCase{0, 64, 64, 2, 2},   // one full block, causal diagonal
                      TcAttentionCase{0, 100, 32, 4, 2},  // two blocks, the second partial
                      TcAttentionCase{70, 20, 128, 4, 1}, // after a cached prefix: 2 key tiles
                      TcAttentionCase{5, 130, 48, 2, 1},  // three blocks, padding rows
                      TcAttentionCase{33, 17, 128, 8, 2, true})); // f16 cache, 4 heads per KV head

TEST(LayerKernels, ArgmaxPicksTheMaximumAndTheLowestIdOnTies) {
  const int n_vocab = 1000;
  std::vector<float> logits = random_floats(3 * n_vocab, 101);
  logits[0 * n_vocab + 517] = 50.0f; // clear winner
  logits[1 * n_vocab + 900] = 40.0f; // tie: 300 must win over 900
  logits[1 * n_vocab + 300] = 40.0f;
  logits[2 * n_vocab + 999] = 30.0f; // the last id
  std::vector<int> ids(3, -1);
  emu::launch({3, 1, 1}, 256, 0, [&] { bonsai_argmax(logits.data(), n_vocab, ids.data()); });
  EXPECT_EQ(ids[0], 517);
  EXPECT_EQ(ids[1], 300);
  EXPECT_EQ(ids[2], 999);
}

} // namespace

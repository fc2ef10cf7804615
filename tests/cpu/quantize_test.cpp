// Activation quantization of the CPU plugin (plugins/cpu/src/activations.*):
// the scalar quantizer on hand-computed blocks, and the AVX2, AVX-512 and
// AArch64 quantizers byte for byte against the scalar one (their
// specification).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "activations.hpp"
#include "cpu_features.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/simd_kernels.hpp"

namespace bonsai::cpu {
namespace {

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> meta;
  std::vector<float> dsum;
};

Quantized quantize_with(QuantizeRowFn fn, const std::vector<float> &x, QuantLayout layout) {
  const int64_t blocks = static_cast<int64_t>(x.size()) / kActBlock;
  Quantized out;
  out.q.assign(static_cast<size_t>(blocks * q_block_bytes(layout)), 99);
  out.meta.assign(static_cast<size_t>(blocks * meta_per_block(layout)), -1.0f);
  out.dsum.assign(static_cast<size_t>(blocks), -1.0f);
  QuantTarget target;
  target.q = out.q.data();
  target.d = out.meta.data();
  target.dsum = out.dsum.data();
  target.stride = 1;
  fn(x.data(), static_cast<int64_t>(x.size()), layout, target);
  return out;
}

// One block, zero except for a few values; expectations worked out by hand
// from the layout definitions in activations.hpp.
TEST(QuantizeScalar, Q1Mask512ScalesEachLaneAndKeepsNaturalOrder) {
  std::vector<float> x(kActBlock, 0.0f);
  x[3] = 2.0f;   // lane 0 (values 0..3, 64..67)
  x[70] = -1.0f; // lane (70 - 64) / 4 = 1
  x[68] = 0.5f;  // lane 1 too: 0.5 / (1 / 127) = 63.5 rounds to the even 64
  x[9] = 0.5f;   // lane 2 (values 8..11, 72..75)
  const Quantized r = quantize_with(quantize_act_row, x, QuantLayout::Q1Mask512);
  for (int e = 0; e < kActBlock; ++e) {
    const int expected = e == 3 ? 127 : e == 70 ? -127 : e == 68 ? 64 : e == 9 ? 127 : 0;
    EXPECT_EQ(r.q[e], expected) << "value " << e;
  }
  const float s0 = 2.0f / 127.0f, s1 = 1.0f / 127.0f, s2 = 0.5f / 127.0f;
  EXPECT_EQ(r.meta[0], s0);
  EXPECT_EQ(r.meta[1], s1);
  EXPECT_EQ(r.meta[2], s2);
  for (int lane = 3; lane < kLaneCount; ++lane)
    EXPECT_EQ(r.meta[lane], 0.0f) << "lane " << lane;
  EXPECT_FLOAT_EQ(r.meta[kLaneCount + 0], 2.0f);
  EXPECT_FLOAT_EQ(r.meta[kLaneCount + 1], (-127.0f + 64.0f) * s1);
  EXPECT_FLOAT_EQ(r.meta[kLaneCount + 2], 0.5f);
  for (int lane = 3; lane < kLaneCount; ++lane)
    EXPECT_EQ(r.meta[kLaneCount + lane], 0.0f) << "lane " << lane;
}

TEST(QuantizeScalar, Q2Lanes512StoresCodeOrderAndScalesEachLane) {
  std::vector<float> x(kActBlock, 0.0f);
  x[5] = 1.0f;    // e = 4*1 + 1: position 32*1 + 1 = 33, lane 8
  x[127] = -3.0f; // e = 4*31 + 3: position 127, lane 15
  x[112] = 1.5f;  // e = 4*28 + 0: position 28, lane 7
  x[124] = 0.75f; // e = 4*31 + 0: position 31, lane 7: 0.75 / (1.5 / 127) = 63.5 -> 64
  const Quantized r = quantize_with(quantize_act_row, x, QuantLayout::Q2Lanes512);
  for (int p = 0; p < kActBlock; ++p) {
    const int expected = p == 33 ? 127 : p == 127 ? -127 : p == 28 ? 127 : p == 31 ? 64 : 0;
    EXPECT_EQ(r.q[p], expected) << "position " << p;
  }
  const float s7 = 1.5f / 127.0f, s8 = 1.0f / 127.0f, s15 = 3.0f / 127.0f;
  for (int lane = 0; lane < kLaneCount; ++lane) {
    const float expected = lane == 7 ? s7 : lane == 8 ? s8 : lane == 15 ? s15 : 0.0f;
    EXPECT_EQ(r.meta[lane], expected) << "lane " << lane;
  }
  EXPECT_FLOAT_EQ(r.meta[kLaneCount + 7], (127.0f + 64.0f) * s7);
  EXPECT_FLOAT_EQ(r.meta[kLaneCount + 8], 1.0f);
  EXPECT_FLOAT_EQ(r.meta[kLaneCount + 15], -3.0f);
}

TEST(QuantizeScalar, SubBlockLayoutsKeepEightScalesAndTheBlockSum) {
  std::vector<float> x(kActBlock, 0.0f);
  x[0] = 1.0f;
  x[17] = -2.0f; // sub-block 1
  const Quantized r = quantize_with(quantize_act_row, x, QuantLayout::Natural);
  EXPECT_EQ(r.q[0], 127);
  EXPECT_EQ(r.q[17], -127);
  EXPECT_EQ(r.meta[0], 1.0f / 127.0f);
  EXPECT_EQ(r.meta[1], 2.0f / 127.0f);
  EXPECT_FLOAT_EQ(r.dsum[0], 1.0f - 2.0f);
}

TEST(QuantizeScalar, NaNBecomesZeroAndIsIgnoredByTheScale) {
  std::vector<float> x(kActBlock, 0.0f);
  x[1] = std::numeric_limits<float>::quiet_NaN();
  x[2] = 0.25f;
  const Quantized r = quantize_with(quantize_act_row, x, QuantLayout::Q1Mask512);
  EXPECT_EQ(r.q[1], 0);
  EXPECT_EQ(r.q[2], 127);
  EXPECT_EQ(r.meta[0], 0.25f / 127.0f);
}

// Rows with the awkward values a model can produce, and plain random ones.
std::vector<float> awkward_row(int64_t cols, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(cols));
  for (float &v : x)
    v = uniform(rng);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            3e38f,
                            1e-30f};
  std::uniform_int_distribution<int> pick(0, static_cast<int>(std::size(specials)) - 1);
  std::uniform_int_distribution<int64_t> where(0, cols - 1);
  for (int i = 0; i < 12; ++i)
    x[static_cast<size_t>(where(rng))] = specials[pick(rng)];
  // A sub-block of denormals only (the inverse scale overflows to inf), one
  // of zeros, and one with all values equal.
  for (int j = 0; j < 16; ++j) {
    x[static_cast<size_t>(j)] = (j % 2 ? 1 : -1) * std::numeric_limits<float>::denorm_min() * j;
    x[static_cast<size_t>(16 + j)] = 0.0f;
    x[static_cast<size_t>(32 + j)] = 0.75f;
  }
  return x;
}

// A SIMD quantizer against the scalar one on awkward rows of several widths:
// the same bytes, metadata and dsum (left untouched by both for the layouts
// without one), bit for bit.
void expect_same_as_scalar(QuantizeRowFn fn, QuantLayout layout, unsigned seed) {
  std::mt19937 rng(seed);
  for (int64_t cols : {128, 256, 2048, 6144}) {
    for (int trial = 0; trial < 4; ++trial) {
      const std::vector<float> x = awkward_row(cols, rng);
      const Quantized want = quantize_with(quantize_act_row, x, layout);
      const Quantized got = quantize_with(fn, x, layout);
      ASSERT_EQ(got.q, want.q) << "cols " << cols << " trial " << trial;
      ASSERT_EQ(0, std::memcmp(got.meta.data(), want.meta.data(), want.meta.size() * 4))
          << "cols " << cols << " trial " << trial;
      ASSERT_EQ(0, std::memcmp(got.dsum.data(), want.dsum.data(), want.dsum.size() * 4))
          << "cols " << cols << " trial " << trial;
    }
  }
}

std::string layout_name(const ::testing::TestParamInfo<QuantLayout> &info) {
  switch (info.param) {
  case QuantLayout::Q1Lanes:
    return "Q1Lanes";
  case QuantLayout::Q2Lanes:
    return "Q2Lanes";
  case QuantLayout::Natural:
    return "Natural";
  case QuantLayout::Q1Mask512:
    return "Q1Mask512";
  case QuantLayout::Q1Tables:
    return "Q1Tables";
  case QuantLayout::Q1TablesAndValues:
    return "Q1TablesAndValues";
  default:
    return "Q2Lanes512";
  }
}

// The layouts by hand (activations.hpp): value e = 8i + m goes to Q1Lanes
// position 32(m / 2) + 16(m % 2) + i and e = 4b + k to Q2Lanes 32k + b. Each
// scale group gets one value of 127, so every scale is 1 and the integers
// quantize to themselves; dsum is then the sum of all values.
void expect_values_at_layout_positions(QuantizeRowFn fn, QuantLayout layout) {
  std::vector<float> x(kActBlock);
  for (int e = 0; e < kActBlock; ++e)
    x[static_cast<size_t>(e)] = static_cast<float>((e * 37) % 201 - 100);
  for (int g = 0; g < 8; ++g) {
    // Group g: Q1Lanes the values e with e % 2 = g / 4 and e / 32 = g % 4;
    // the others values 16g..16g+15.
    const int e = layout == QuantLayout::Q1Lanes ? 32 * (g % 4) + g / 4 : 16 * g;
    x[static_cast<size_t>(e)] = 127.0f;
  }
  const Quantized got = quantize_with(fn, x, layout);
  float total = 0.0f;
  for (int e = 0; e < kActBlock; ++e) {
    int position = e;
    if (layout == QuantLayout::Q1Lanes)
      position = 32 * (e % 8 / 2) + 16 * (e % 2) + e / 8;
    else if (layout == QuantLayout::Q2Lanes)
      position = 32 * (e % 4) + e / 4;
    EXPECT_EQ(got.q[static_cast<size_t>(position)], static_cast<int8_t>(x[static_cast<size_t>(e)]))
        << "value " << e;
    total += x[static_cast<size_t>(e)];
  }
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(got.meta[static_cast<size_t>(g)], 1.0f) << "group " << g;
  EXPECT_EQ(got.dsum[0], total);
}

// The scalar quantizer and every SIMD one this machine runs.
std::vector<QuantizeRowFn> simd_quantizers_with_scalar() {
  std::vector<QuantizeRowFn> fns = {quantize_act_row};
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_features().has_avx2_set())
    fns.push_back(avx2_quantize_act_row);
#elif defined(__aarch64__)
  if (cpu_features().has_neon_set())
    fns.push_back(neon_quantize_act_row);
#endif
  return fns;
}

// Q1Tables by hand: every sub-block's max is 127, so the scale is 1 and the
// tables hold sums of the values themselves, low bytes then high bytes.
TEST(QuantizeScalar, Q1TablesHoldTheSignedSumsOfEachGroupOfFour) {
  std::vector<float> x(kActBlock, 0.0f);
  for (int e = 0; e < 4; ++e)
    x[static_cast<size_t>(e)] = 127.0f; // group 0: the extremes +-508
  x[4] = 1.0f;                          // group 1: 1, -2, 3, 4
  x[5] = -2.0f;
  x[6] = 3.0f;
  x[7] = 4.0f;
  for (int s = 1; s < 8; ++s)
    x[static_cast<size_t>(16 * s)] = -127.0f; // first value of groups 4, 8, ..., 28
  for (const QuantizeRowFn fn : simd_quantizers_with_scalar()) {
    const Quantized r = quantize_with(fn, x, QuantLayout::Q1Tables);
    const auto entry = [&](int group, int v) {
      const uint8_t lo = static_cast<uint8_t>(r.q[static_cast<size_t>(32 * group + v)]);
      const uint8_t hi = static_cast<uint8_t>(r.q[static_cast<size_t>(32 * group + 16 + v)]);
      return static_cast<int16_t>(static_cast<uint16_t>(lo | (hi << 8)));
    };
    EXPECT_EQ(entry(0, 15), 508);
    EXPECT_EQ(entry(0, 0), -508);
    EXPECT_EQ(entry(0, 5), 0);   // +127 -127 +127 -127
    EXPECT_EQ(entry(1, 0), -6);  // -1 +2 -3 -4
    EXPECT_EQ(entry(1, 1), -4);  // +1 +2 -3 -4
    EXPECT_EQ(entry(1, 5), 2);   // +1 +2 +3 -4
    EXPECT_EQ(entry(1, 10), -2); // v = 0b1010: -1 +(-2) -3 +4
    EXPECT_EQ(entry(1, 15), 6);
    EXPECT_EQ(entry(2, 7), 0);    // a group of zeros
    EXPECT_EQ(entry(4, 1), -127); // -127 then three zeros
    for (int s = 0; s < 8; ++s)
      EXPECT_EQ(r.meta[static_cast<size_t>(s)], 1.0f) << "sub-block " << s;
  }
}

// Q1TablesAndValues: the Q1Tables bytes, then the Natural bytes, with
// their scales and dsum, from the scalar quantizer and every SIMD one.
TEST(QuantizeScalar, Q1TablesAndValuesAreTheTablesThenTheNaturalBytes) {
  std::mt19937 rng(3);
  const std::vector<float> x = awkward_row(3 * kActBlock, rng);
  const Quantized tables = quantize_with(quantize_act_row, x, QuantLayout::Q1Tables);
  const Quantized natural = quantize_with(quantize_act_row, x, QuantLayout::Natural);
  for (const QuantizeRowFn fn : simd_quantizers_with_scalar()) {
    const Quantized both = quantize_with(fn, x, QuantLayout::Q1TablesAndValues);
    ASSERT_EQ(both.q.size(), 3u * (1024 + 128));
    for (size_t b = 0; b < 3; ++b) {
      EXPECT_TRUE(std::equal(tables.q.begin() + 1024 * b, tables.q.begin() + 1024 * (b + 1),
                             both.q.begin() + 1152 * b))
          << "block " << b;
      EXPECT_TRUE(std::equal(natural.q.begin() + 128 * b, natural.q.begin() + 128 * (b + 1),
                             both.q.begin() + 1152 * b + 1024))
          << "block " << b;
    }
    EXPECT_EQ(0, std::memcmp(both.meta.data(), natural.meta.data(), natural.meta.size() * 4));
    EXPECT_EQ(0, std::memcmp(both.dsum.data(), natural.dsum.data(), natural.dsum.size() * 4));
  }
}

// The x86-64 quantizers (their kernels are built only there).
#if defined(__x86_64__) || defined(__i386__)
class QuantizeAvx512 : public ::testing::TestWithParam<QuantLayout> {
protected:
  void SetUp() override {
    if (!cpu_features().has_avx512_set())
      GTEST_SKIP() << "skipped: this CPU lacks AVX-512 F/BW/VNNI (" << cpu_features().describe()
                   << ")";
  }
};

TEST_P(QuantizeAvx512, BytesAndMetaEqualTheScalarQuantizer) {
  expect_same_as_scalar(avx512_quantize_act_row, GetParam(), 11);
}

class QuantizeAvx2 : public ::testing::TestWithParam<QuantLayout> {
protected:
  void SetUp() override {
    if (!cpu_features().has_avx2_set())
      GTEST_SKIP() << "skipped: this CPU lacks AVX2/FMA/F16C (" << cpu_features().describe() << ")";
  }
};

TEST_P(QuantizeAvx2, BytesScalesAndDsumEqualTheScalarQuantizer) {
  expect_same_as_scalar(avx2_quantize_act_row, GetParam(), 5);
}

class QuantizeAvx2ByHand : public QuantizeAvx2 {};

TEST_P(QuantizeAvx2ByHand, EveryValueLandsAtItsLayoutPosition) {
  expect_values_at_layout_positions(avx2_quantize_act_row, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Layouts, QuantizeAvx2ByHand,
                         ::testing::Values(QuantLayout::Q1Lanes, QuantLayout::Q2Lanes,
                                           QuantLayout::Natural),
                         layout_name);

INSTANTIATE_TEST_SUITE_P(Layouts, QuantizeAvx2,
                         ::testing::Values(QuantLayout::Q1Lanes, QuantLayout::Q2Lanes,
                                           QuantLayout::Natural, QuantLayout::Q1Tables,
                                           QuantLayout::Q1Mask512),
                         layout_name);

INSTANTIATE_TEST_SUITE_P(Layouts, QuantizeAvx512,
                         ::testing::Values(QuantLayout::Q1Mask512, QuantLayout::Q2Lanes512,
                                           QuantLayout::Q1Lanes, QuantLayout::Natural),
                         [](const auto &info) {
                           switch (info.param) {
                           case QuantLayout::Q1Mask512:
                             return std::string("Q1Mask512");
                           case QuantLayout::Q2Lanes512:
                             return std::string("Q2Lanes512");
                           case QuantLayout::Q1Lanes:
                             return std::string("Q1Lanes");
                           default:
                             return std::string("Natural");
                           }
                         });

#endif

// The AArch64 quantizer (built only there).
#if defined(__aarch64__)
class QuantizeNeon : public ::testing::TestWithParam<QuantLayout> {
protected:
  void SetUp() override {
    if (!cpu_features().has_neon_set())
      GTEST_SKIP() << "skipped: this CPU lacks Advanced SIMD (" << cpu_features().describe() << ")";
  }
};

TEST_P(QuantizeNeon, BytesScalesAndDsumEqualTheScalarQuantizer) {
  expect_same_as_scalar(neon_quantize_act_row, GetParam(), 17);
}

// The value layouts by hand, as for AVX2.
TEST_P(QuantizeNeon, EveryValueLandsAtItsLayoutPosition) {
  const QuantLayout layout = GetParam();
  if (layout_has_tables(layout) || layout == QuantLayout::Q1Mask512)
    GTEST_SKIP() << "no value layout";
  expect_values_at_layout_positions(neon_quantize_act_row, layout);
}

INSTANTIATE_TEST_SUITE_P(Layouts, QuantizeNeon,
                         ::testing::Values(QuantLayout::Q1Lanes, QuantLayout::Q2Lanes,
                                           QuantLayout::Natural, QuantLayout::Q1Tables,
                                           QuantLayout::Q1TablesAndValues, QuantLayout::Q1Mask512),
                         layout_name);

#endif

} // namespace
} // namespace bonsai::cpu

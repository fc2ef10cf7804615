// The SIMD attention kernels of the CPU plugin (AVX-512, AVX2 and AArch64
// multi-query, AVX2 and AArch64 single-query, on f32 and f16 caches, the
// vectorised softmaxes and the f16 stores) against float64 math, and the property the plugin relies
// on: a query's scores and weighted sums do not depend on how many queries share the call (prefill
// and decode give a token bit-identical attention).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/simd_kernels.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kDim = 128;

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(rng);
  return v;
}

// A set's multi-query kernels and whether this CPU can run them.
struct MultiQueryKernels {
  const char *name;
  bool (*available)();
  void (*key_scores_multi)(const QueryGroup &, const HeadSpan &, float, float *, int64_t);
  void (*weighted_values_multi)(const float *, int64_t, const QueryGroup &, const HeadSpan &);
};

class MultiQueryAttention : public ::testing::TestWithParam<MultiQueryKernels> {
protected:
  void SetUp() override {
    if (!GetParam().available())
      GTEST_SKIP() << "skipped: this CPU cannot run the " << GetParam().name << " kernels ("
                   << cpu_features().describe() << ")";
  }
  void key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                        int64_t out_stride) const {
    GetParam().key_scores_multi(queries, keys, scale, out, out_stride);
  }
  void weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                             const HeadSpan &values) const {
    GetParam().weighted_values_multi(p, p_stride, queries, values);
  }
  // Keys and values interleaved with another head's, as in the KV cache.
  static constexpr int64_t kStride = 2 * kDim;
  HeadSpan span(const std::vector<float> &cache, int64_t n) const {
    HeadSpan s;
    s.base = cache.data() + kDim; // the second head
    s.stride = kStride;
    s.n = n;
    s.dim = kDim;
    return s;
  }
  // `n` queries from q, kDim apart, writing to out (kDim apart) when given.
  static QueryGroup queries(const float *q, int n, float *out = nullptr) {
    QueryGroup g;
    g.n = n;
    for (int i = 0; i < n; ++i) {
      g.q[i] = q == nullptr ? nullptr : q + i * kDim;
      g.out[i] = out == nullptr ? nullptr : out + i * kDim;
    }
    return g;
  }
};

TEST_P(MultiQueryAttention, ScoresMatchFloat64ForEveryQueryCountAndKeyCount) {
  const std::vector<float> q = random_values(4 * kDim, 1);
  const std::vector<float> cache = random_values(11 * kStride, 2);
  const float scale = 0.125f;
  for (int nq = 1; nq <= 4; ++nq)
    for (int64_t n_keys : {1, 3, 4, 7, 11}) {
      std::vector<float> out(4 * 16, -1.0f);
      key_scores_multi(queries(q.data(), nq), span(cache, n_keys), scale, out.data(), 16);
      for (int i = 0; i < nq; ++i)
        for (int64_t j = 0; j < n_keys; ++j) {
          double dot = 0.0, l1 = 0.0;
          for (int c = 0; c < kDim; ++c) {
            const double p = double(q[i * kDim + c]) * cache[j * kStride + kDim + c];
            dot += p;
            l1 += std::fabs(p);
          }
          EXPECT_NEAR(out[i * 16 + j], dot * scale, 1e-6 * l1 * scale + 1e-7)
              << "nq " << nq << " keys " << n_keys << " query " << i << " key " << j;
        }
      for (int i = 0; i < nq; ++i) // nothing written past the keys
        for (int64_t j = n_keys; j < 16; ++j)
          EXPECT_EQ(out[i * 16 + j], -1.0f);
    }
}

TEST_P(MultiQueryAttention, AQueryScoresTheSameAloneAndInAGroup) {
  const std::vector<float> q = random_values(4 * kDim, 3);
  const std::vector<float> cache = random_values(13 * kStride, 4);
  std::vector<float> grouped(4 * 16), alone(16);
  key_scores_multi(queries(q.data(), 4), span(cache, 13), 0.1f, grouped.data(), 16);
  for (int i = 0; i < 4; ++i)
    for (int64_t n_keys : {13, 9, 6}) { // the key groups split differently
      key_scores_multi(queries(q.data() + i * kDim, 1), span(cache, n_keys), 0.1f, alone.data(),
                       16);
      for (int64_t j = 0; j < n_keys; ++j)
        ASSERT_EQ(alone[j], grouped[i * 16 + j]) << "query " << i << " key " << j;
    }
}

TEST_P(MultiQueryAttention, WeightedValuesMatchFloat64AndIgnoreZeroWeights) {
  const std::vector<float> cache = random_values(9 * kStride, 5);
  std::vector<float> p = random_values(4 * 16, 6);
  for (float &w : p)
    w = std::fabs(w);
  for (int nq = 1; nq <= 4; ++nq) {
    std::vector<float> out(4 * kDim, -1.0f);
    weighted_values_multi(p.data(), 16, queries(nullptr, nq, out.data()), span(cache, 9));
    for (int i = 0; i < nq; ++i)
      for (int c = 0; c < kDim; ++c) {
        double sum = 0.0, l1 = 0.0;
        for (int64_t j = 0; j < 9; ++j) {
          const double term = double(p[i * 16 + j]) * cache[j * kStride + kDim + c];
          sum += term;
          l1 += std::fabs(term);
        }
        ASSERT_NEAR(out[i * kDim + c], sum, 1e-6 * l1 + 1e-7) << "query " << i << " dim " << c;
      }
  }
  // Weights of zero past a query's causal end change nothing, bit for bit.
  std::vector<float> padded(16, 0.0f), short_out(kDim), long_out(kDim);
  for (int j = 0; j < 5; ++j)
    padded[j] = p[j];
  weighted_values_multi(padded.data(), 16, queries(nullptr, 1, short_out.data()), span(cache, 5));
  weighted_values_multi(padded.data(), 16, queries(nullptr, 1, long_out.data()), span(cache, 9));
  EXPECT_EQ(short_out, long_out);
}

// An f16 copy of a cache and the f32 values it holds (what float64 expects).
struct HalfCache {
  std::vector<uint16_t> bits;
  std::vector<float> values;
  explicit HalfCache(const std::vector<float> &from) {
    for (float x : from) {
      bits.push_back(f32_to_fp16(x));
      values.push_back(fp16_to_f32(bits.back()));
    }
  }
  HeadSpan span(int64_t n) const {
    HeadSpan s;
    s.base = bits.data() + kDim; // the second head, as in the fixture
    s.type = KvType::F16;
    s.stride = 2 * kDim;
    s.n = n;
    s.dim = kDim;
    return s;
  }
};

// float64 scale * dot(q, key j) and its l1 bound for the tolerance.
std::pair<double, double> exact_score(const float *q, const std::vector<float> &cache, int64_t j) {
  double dot = 0.0, l1 = 0.0;
  for (int c = 0; c < kDim; ++c) {
    const double p = double(q[c]) * cache[j * 2 * kDim + kDim + c];
    dot += p;
    l1 += std::fabs(p);
  }
  return {dot, l1};
}

// A softmax kernel against double exp: rows of several lengths (partial
// vectors included), one score 200 below the max, weights to 4e-7 relative
// (plus `floor` absolute, where the kernel's exp stops), sums to 1e-6.
void expect_softmax_matches_double_exp(float (*softmax)(float *, int64_t),
                                       std::initializer_list<int64_t> lengths, unsigned seed,
                                       double floor) {
  for (int64_t n : lengths) {
    std::vector<float> scores =
        random_values(static_cast<size_t>(n), seed + static_cast<unsigned>(n));
    for (float &x : scores)
      x *= 8.0f;
    if (n > 2)
      scores[1] = scores[0] - 200.0f; // far below the max: weighs (almost) nothing
    const std::vector<float> input = scores;
    const float max_score = *std::max_element(input.begin(), input.end());
    const float sum = softmax(scores.data(), n);
    double expected_sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      // the kernel's argument, score - max rounded to f32 as it computes it
      const double expected = std::exp(double(input[j] - max_score));
      expected_sum += expected;
      ASSERT_NEAR(scores[j], expected, 4e-7 * expected + floor) << "n " << n << " j " << j;
    }
    EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
  }
}

TEST_P(MultiQueryAttention, F16CachesMatchFloat64OfTheirHalfValues) {
  const std::vector<float> q = random_values(4 * kDim, 7);
  const HalfCache keys(random_values(11 * kStride, 8));
  const HalfCache values(random_values(11 * kStride, 9));
  std::vector<float> p = random_values(4 * 16, 10);
  for (float &w : p)
    w = std::fabs(w);
  for (int nq = 1; nq <= 4; ++nq)
    for (int64_t n_keys : {1, 5, 11}) {
      std::vector<float> scores(4 * 16, -1.0f);
      key_scores_multi(queries(q.data(), nq), keys.span(n_keys), 0.125f, scores.data(), 16);
      std::vector<float> out(4 * kDim);
      weighted_values_multi(p.data(), 16, queries(nullptr, nq, out.data()), values.span(n_keys));
      for (int i = 0; i < nq; ++i) {
        for (int64_t j = 0; j < n_keys; ++j) {
          const auto [dot, l1] = exact_score(q.data() + i * kDim, keys.values, j);
          ASSERT_NEAR(scores[i * 16 + j], dot * 0.125, 1e-6 * l1 * 0.125 + 1e-7);
        }
        for (int c = 0; c < kDim; ++c) {
          double sum = 0.0, l1 = 0.0;
          for (int64_t j = 0; j < n_keys; ++j) {
            const double term = double(p[i * 16 + j]) * values.values[j * kStride + kDim + c];
            sum += term;
            l1 += std::fabs(term);
          }
          ASSERT_NEAR(out[i * kDim + c], sum, 1e-6 * l1 + 1e-7) << "query " << i << " dim " << c;
        }
      }
    }
}

// A set's single-query kernels: scores and weighted sums against float64 on
// f32 and f16 caches, and each key's score the same in any group of keys.
using KeyScoresFn = void (*)(const float *, const HeadSpan &, float, float *);
using WeightedValuesFn = void (*)(const float *, const HeadSpan &, float *);
void expect_single_query_matches_float64(KeyScoresFn key_scores, WeightedValuesFn weighted_values) {
  const std::vector<float> q = random_values(kDim, 11);
  const std::vector<float> key_values = random_values(13 * 2 * kDim, 12);
  const std::vector<float> value_values = random_values(13 * 2 * kDim, 13);
  const HalfCache half_keys(key_values), half_values(value_values);
  std::vector<float> p = random_values(16, 14);
  for (float &w : p)
    w = std::fabs(w);
  for (const bool f16 : {false, true}) {
    const std::vector<float> &k = f16 ? half_keys.values : key_values;
    const std::vector<float> &v = f16 ? half_values.values : value_values;
    const auto spans = [&](int64_t n_keys) {
      HeadSpan keys = half_keys.span(n_keys), values = half_values.span(n_keys);
      if (!f16) {
        keys.base = key_values.data() + kDim;
        keys.type = KvType::F32;
        values.base = value_values.data() + kDim;
        values.type = KvType::F32;
      }
      return std::pair{keys, values};
    };
    std::vector<float> all_keys(16);
    key_scores(q.data(), spans(13).first, 0.125f, all_keys.data());
    for (int64_t n_keys : {1, 3, 4, 7, 13}) {
      const auto [keys, values] = spans(n_keys);
      std::vector<float> scores(16, -1.0f), out(kDim);
      key_scores(q.data(), keys, 0.125f, scores.data());
      weighted_values(p.data(), values, out.data());
      for (int64_t j = 0; j < n_keys; ++j) {
        const auto [dot, l1] = exact_score(q.data(), k, j);
        ASSERT_NEAR(scores[j], dot * 0.125, 1e-6 * l1 * 0.125 + 1e-7) << "f16 " << f16;
      }
      EXPECT_EQ(scores[n_keys], -1.0f) << "wrote past the keys";
      for (int64_t j = 0; j < n_keys; ++j) // a key scores the same in any group of keys
        ASSERT_EQ(scores[j], all_keys[j]) << "f16 " << f16 << " keys " << n_keys << " key " << j;
      for (int c = 0; c < kDim; ++c) {
        double sum = 0.0, l1 = 0.0;
        for (int64_t j = 0; j < n_keys; ++j) {
          sum += double(p[j]) * v[j * 2 * kDim + kDim + c];
          l1 += std::fabs(double(p[j]) * v[j * 2 * kDim + kDim + c]);
        }
        ASSERT_NEAR(out[c], sum, 1e-6 * l1 + 1e-7) << "f16 " << f16 << " dim " << c;
      }
    }
  }
}

// An f16 store against the scalar conversion, value by value.
void expect_f16_store_matches_scalar(void (*to_f16)(const float *, uint16_t *, int64_t)) {
  std::vector<float> x = {
      0.0f,     -0.0f,       1.0f,           -2.5f,           65504.0f, 65519.0f,
      65520.0f, 1e9f,        -1e9f,          6.0e-8f,         3.0e-8f,  2.9e-8f,
      1.0e-5f,  -6.1035e-5f, 1.00048828125f, 1.000732421875f, INFINITY, -INFINITY};
  const std::vector<float> more = random_values(29, 30); // and a tail of odd length
  x.insert(x.end(), more.begin(), more.end());
  std::vector<uint16_t> out(x.size());
  to_f16(x.data(), out.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(out[i], f32_to_fp16(x[i])) << "value " << x[i];
}

#if defined(__x86_64__) || defined(__i386__)
INSTANTIATE_TEST_SUITE_P(
    Sets, MultiQueryAttention,
    ::testing::Values(MultiQueryKernels{"avx512", [] { return cpu_features().has_avx512_set(); },
                                        avx512_key_scores_multi, avx512_weighted_values_multi},
                      MultiQueryKernels{"avx2", [] { return cpu_features().has_avx2_set(); },
                                        avx2_key_scores_multi, avx2_weighted_values_multi}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Avx512Softmax, SoftmaxWeightsMatchDoubleExp) {
  if (!cpu_features().has_avx512_set())
    GTEST_SKIP() << "skipped: this CPU lacks AVX-512 F/BW/VNNI (" << cpu_features().describe()
                 << ")";
  expect_softmax_matches_double_exp(avx512_softmax_weights, {1, 7, 16, 17, 100}, 0, 1e-30);
}

class Avx2Attention : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpu_features().has_avx2_set())
      GTEST_SKIP() << "skipped: this CPU lacks AVX2/FMA/F16C (" << cpu_features().describe() << ")";
  }
};

TEST_F(Avx2Attention, ScoresAndWeightedSumsMatchFloat64OnF32AndF16Caches) {
  expect_single_query_matches_float64(avx2_key_scores, avx2_weighted_values);
}

TEST_F(Avx2Attention, SoftmaxWeightsMatchDoubleExp) {
  // Its exp clamps at -87: a weight that would underflow is ~1e-38, not 0.
  expect_softmax_matches_double_exp(avx2_softmax_weights, {1, 7, 8, 9, 100}, 20, 2e-38);
}

TEST_F(Avx2Attention, F16StoreRoundsExactlyLikeTheScalarConversion) {
  expect_f16_store_matches_scalar(avx2_to_f16);
}
#endif

#if defined(__aarch64__)
INSTANTIATE_TEST_SUITE_P(Sets, MultiQueryAttention,
                         ::testing::Values(MultiQueryKernels{
                             "neon", [] { return cpu_features().has_neon_set(); },
                             neon_key_scores_multi, neon_weighted_values_multi}),
                         [](const auto &info) { return std::string(info.param.name); });

class NeonAttention : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpu_features().has_neon_set())
      GTEST_SKIP() << "skipped: this CPU lacks Advanced SIMD (" << cpu_features().describe() << ")";
  }
};

TEST_F(NeonAttention, ScoresAndWeightedSumsMatchFloat64OnF32AndF16Caches) {
  expect_single_query_matches_float64(neon_key_scores, neon_weighted_values);
}

// One query alone scores and sums exactly as the same query in a group of one.
TEST_F(NeonAttention, SingleQueryKernelsEqualTheGroupOfOne) {
  const std::vector<float> q = random_values(kDim, 40);
  const HalfCache keys(random_values(9 * 2 * kDim, 41));
  std::vector<float> p = random_values(16, 42);
  std::vector<float> single(16), grouped(16), out_single(kDim), out_grouped(kDim);
  neon_key_scores(q.data(), keys.span(9), 0.125f, single.data());
  QueryGroup group;
  group.n = 1;
  group.q[0] = q.data();
  group.out[0] = out_grouped.data();
  neon_key_scores_multi(group, keys.span(9), 0.125f, grouped.data(), 16);
  for (int j = 0; j < 9; ++j)
    ASSERT_EQ(single[j], grouped[j]) << "key " << j;
  neon_weighted_values(p.data(), keys.span(9), out_single.data());
  neon_weighted_values_multi(p.data(), 16, group, keys.span(9));
  EXPECT_EQ(out_single, out_grouped);
}

TEST_F(NeonAttention, SoftmaxWeightsMatchDoubleExp) {
  // Its exp clamps at -87 as the AVX2 one does.
  expect_softmax_matches_double_exp(neon_softmax_weights, {1, 3, 4, 5, 100}, 20, 2e-38);
}

TEST_F(NeonAttention, F16StoreRoundsExactlyLikeTheScalarConversion) {
  expect_f16_store_matches_scalar(neon_to_f16);
}
#endif

} // namespace
} // namespace bonsai::cpu

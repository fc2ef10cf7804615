// The AVX-512 multi-query attention kernels of the CPU plugin against
// float64 dot products, and the property the plugin relies on: a query's
// scores and weighted sums do not depend on how many queries share the call
// (prefill and decode give a token bit-identical attention).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu_features.hpp"
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

class MultiQueryAttention : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpu_features().has_avx512_set())
      GTEST_SKIP() << "skipped: this CPU lacks AVX-512 F/BW/VNNI (" << cpu_features().describe()
                   << ")";
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
};

TEST_F(MultiQueryAttention, ScoresMatchFloat64ForEveryQueryCountAndKeyCount) {
  const std::vector<float> q = random_values(4 * kDim, 1);
  const std::vector<float> cache = random_values(11 * kStride, 2);
  const float scale = 0.125f;
  for (int nq = 1; nq <= 4; ++nq)
    for (int64_t n_keys : {1, 3, 4, 7, 11}) {
      std::vector<float> out(4 * 16, -1.0f);
      MultiQuery queries{q.data(), kDim, nq};
      avx512_key_scores_multi(queries, span(cache, n_keys), scale, out.data(), 16);
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

TEST_F(MultiQueryAttention, AQueryScoresTheSameAloneAndInAGroup) {
  const std::vector<float> q = random_values(4 * kDim, 3);
  const std::vector<float> cache = random_values(13 * kStride, 4);
  std::vector<float> grouped(4 * 16), alone(16);
  avx512_key_scores_multi(MultiQuery{q.data(), kDim, 4}, span(cache, 13), 0.1f, grouped.data(), 16);
  for (int i = 0; i < 4; ++i)
    for (int64_t n_keys : {13, 9, 6}) { // the key groups split differently
      avx512_key_scores_multi(MultiQuery{q.data() + i * kDim, kDim, 1}, span(cache, n_keys), 0.1f,
                              alone.data(), 16);
      for (int64_t j = 0; j < n_keys; ++j)
        ASSERT_EQ(alone[j], grouped[i * 16 + j]) << "query " << i << " key " << j;
    }
}

TEST_F(MultiQueryAttention, WeightedValuesMatchFloat64AndIgnoreZeroWeights) {
  const std::vector<float> cache = random_values(9 * kStride, 5);
  std::vector<float> p = random_values(4 * 16, 6);
  for (float &w : p)
    w = std::fabs(w);
  for (int nq = 1; nq <= 4; ++nq) {
    std::vector<float> out(4 * kDim, -1.0f);
    avx512_weighted_values_multi(p.data(), 16, nq, span(cache, 9), out.data(), kDim);
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
  avx512_weighted_values_multi(padded.data(), 16, 1, span(cache, 5), short_out.data(), kDim);
  avx512_weighted_values_multi(padded.data(), 16, 1, span(cache, 9), long_out.data(), kDim);
  EXPECT_EQ(short_out, long_out);
}

} // namespace
} // namespace bonsai::cpu

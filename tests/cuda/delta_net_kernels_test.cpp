// The CUDA plugin's gated DeltaNet kernels (kernels/delta_net.cuh), run on
// the CPU through kernel_emulator.hpp, against a float64 implementation of
// the layer's math written here from its definition (docs/models.md): the
// causal conv with its window, SiLU, the q/k L2 norms, the gates, the gated
// delta rule over a run of tokens with its final state, and the gated
// output norm.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_emulator.hpp"
#include "random_floats.hpp"
// The kernel files, compiled as C++ (at global scope, as in NVRTC).
#include "common_prelude.cuh"

#include "delta_net.cuh"

namespace {

using kernel_test::random_floats;

double silu(double v) {
  return v / (1.0 + std::exp(-v));
}

// A small layer: 2 q/k heads, 4 value heads of 40 (two lanes' worth of rows
// and a partial column block), conv width 4, a run of 5 tokens.
struct Shape {
  int n_k = 2, n_v = 4, d = 40, K = 4, n_tokens = 5;
  float eps = 1e-6f;
  int key_dim() const { return n_k * d; }
  int channels() const { return 2 * key_dim() + n_v * d; }
};

// Float64 of the conv, the norms and the gates for every token: act, beta
// and decay as the kernels leave them, and the window after the run.
struct Prepared {
  std::vector<double> act, beta, decay, window;
};

Prepared reference_prepare(const Shape &s, const std::vector<float> &taps,
                           const std::vector<float> &window_in, const std::vector<float> &mix,
                           const std::vector<float> &beta, const std::vector<float> &alpha,
                           const std::vector<float> &dt_bias, const std::vector<float> &a) {
  const int C = s.channels();
  Prepared p;
  p.window.assign(window_in.begin(), window_in.end());
  p.act.resize(static_cast<size_t>(s.n_tokens) * C);
  for (int t = 0; t < s.n_tokens; ++t) {
    for (int c = 0; c < C; ++c) {
      double y = static_cast<double>(taps[c * s.K + s.K - 1]) * mix[t * C + c];
      for (int i = 0; i + 1 < s.K; ++i)
        y += static_cast<double>(taps[c * s.K + i]) * p.window[i * C + c];
      p.act[t * C + c] = silu(y);
    }
    for (int i = 0; i + 2 < s.K; ++i) // the oldest input leaves, this token's joins
      for (int c = 0; c < C; ++c)
        p.window[i * C + c] = p.window[(i + 1) * C + c];
    for (int c = 0; s.K > 1 && c < C; ++c)
      p.window[(s.K - 2) * C + c] = mix[t * C + c];
    for (int head = 0; head < 2 * s.n_k; ++head) {
      double *v = p.act.data() + t * C + head * s.d;
      double sum = 0;
      for (int i = 0; i < s.d; ++i)
        sum += v[i] * v[i];
      for (int i = 0; i < s.d; ++i)
        v[i] /= std::sqrt(sum + s.eps);
    }
    for (int h = 0; h < s.n_v; ++h) {
      p.beta.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(beta[t * s.n_v + h]))));
      const double x = static_cast<double>(alpha[t * s.n_v + h]) + dt_bias[h];
      p.decay.push_back(std::exp(std::log1p(std::exp(x)) * a[h]));
    }
  }
  return p;
}

// Conv widths 1 (no window), 4 (qwen35's) and 8 (the kernel's widest).
class ConvWidth : public ::testing::TestWithParam<int> {};

TEST_P(ConvWidth, ConvNormsAndGatesMatchFloat64OverARunWithAWindow) {
  Shape s;
  s.K = GetParam();
  const int C = s.channels();
  const auto taps = random_floats(static_cast<size_t>(C) * s.K, 1, 0.5f);
  const auto window_in = random_floats(static_cast<size_t>(s.K - 1) * C, 2);
  const auto mix = random_floats(static_cast<size_t>(s.n_tokens) * C, 3);
  auto beta = random_floats(static_cast<size_t>(s.n_tokens) * s.n_v, 4, 2.0f);
  auto decay = random_floats(beta.size(), 5, 2.0f);
  const auto dt_bias = random_floats(s.n_v, 6);
  std::vector<float> a = random_floats(s.n_v, 7);
  for (float &v : a)
    v = -std::fabs(v); // the file's -exp(A_log): never positive
  const Prepared want = reference_prepare(s, taps, window_in, mix, beta, decay, dt_bias, a);

  std::vector<float> window_out(window_in.size(), 0.0f), act(mix.size(), 0.0f);
  emu::launch({(static_cast<unsigned>(C) + 63) / 64, 1, 1}, 64, 0, [&] {
    bonsai_delta_net_conv(taps.data(), window_in.data(), window_out.data(), mix.data(), act.data(),
                          C, s.K, s.n_tokens);
  });
  emu::launch({static_cast<unsigned>(2 * s.n_k + 1), static_cast<unsigned>(s.n_tokens), 1}, 64, 0,
              [&] {
                bonsai_delta_net_prepare(act.data(), beta.data(), decay.data(), dt_bias.data(),
                                         a.data(), s.n_k, s.n_v, s.d, C, s.eps);
              });
  for (size_t i = 0; i < act.size(); ++i)
    ASSERT_NEAR(act[i], want.act[i], 2e-6 + 1e-5 * std::fabs(want.act[i])) << "act " << i;
  for (size_t i = 0; i < window_out.size(); ++i)
    ASSERT_EQ(window_out[i], static_cast<float>(want.window[i])) << "window " << i;
  for (size_t i = 0; i < beta.size(); ++i) {
    EXPECT_NEAR(beta[i], want.beta[i], 1e-6) << "beta " << i;
    EXPECT_NEAR(decay[i], want.decay[i], 1e-6) << "decay " << i;
    EXPECT_GT(decay[i], 0.0f);
    EXPECT_LE(decay[i], 1.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(DeltaNetKernels, ConvWidth, ::testing::Values(1, 4, 8));

// The rule over the run: S' = g S + k (b (v - g S^T k))^T, o = S'^T q / sqrt(d),
// value head h reading q/k head h mod H_k; the state written to another
// buffer, the one read left as it was.
TEST(DeltaNetKernels, DeltaRuleMatchesFloat64AndLeavesTheStateItReadAlone) {
  Shape s; // a shorter run and heads of 36: the emulator runs every lane as a fiber
  s.n_tokens = 3;
  s.d = 36;
  const int C = s.channels(), d = s.d;
  std::vector<float> act = random_floats(static_cast<size_t>(s.n_tokens) * C, 11);
  for (int t = 0; t < s.n_tokens; ++t) // unit q and k heads, as the norms leave them
    for (int head = 0; head < 2 * s.n_k; ++head) {
      float *v = act.data() + t * C + head * d;
      double sum = 0;
      for (int i = 0; i < d; ++i)
        sum += static_cast<double>(v[i]) * v[i];
      for (int i = 0; i < d; ++i)
        v[i] = static_cast<float>(v[i] / std::sqrt(sum));
    }
  std::vector<float> beta(static_cast<size_t>(s.n_tokens) * s.n_v), decay(beta.size());
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> unit(0.05f, 1.0f);
  for (size_t i = 0; i < beta.size(); ++i) {
    beta[i] = unit(rng);
    decay[i] = unit(rng);
  }
  const size_t state_floats = static_cast<size_t>(s.n_v) * d * d;
  const std::vector<float> state_in = random_floats(state_floats, 13, 0.3f);
  std::vector<float> state_read = state_in, state_out(state_floats, 0.0f);
  std::vector<float> out(static_cast<size_t>(s.n_tokens) * s.n_v * d, 0.0f);
  emu::launch(
      {static_cast<unsigned>(s.n_v), static_cast<unsigned>((d + DR_WARPS - 1) / DR_WARPS), 1},
      32 * DR_WARPS, 0, [&] {
        bonsai_delta_rule(act.data(), beta.data(), decay.data(), state_read.data(),
                          state_out.data(), out.data(), s.n_k, s.n_v, d, s.n_tokens);
      });
  EXPECT_EQ(state_read, state_in);

  std::vector<double> S(state_in.begin(), state_in.end());
  for (int t = 0; t < s.n_tokens; ++t)
    for (int h = 0; h < s.n_v; ++h) {
      const int kh = h % s.n_k;
      const float *q = act.data() + t * C + kh * d;
      const float *k = act.data() + t * C + s.key_dim() + kh * d;
      const float *v = act.data() + t * C + 2 * s.key_dim() + h * d;
      const double g = decay[t * s.n_v + h], b = beta[t * s.n_v + h];
      double *Sh = S.data() + static_cast<size_t>(h) * d * d;
      for (int j = 0; j < d; ++j) {
        double kv = 0;
        for (int i = 0; i < d; ++i)
          kv += g * Sh[i * d + j] * k[i];
        const double delta = b * (v[j] - kv);
        double o = 0;
        for (int i = 0; i < d; ++i) {
          Sh[i * d + j] = g * Sh[i * d + j] + k[i] * delta;
          o += Sh[i * d + j] * q[i];
        }
        const double want = o / std::sqrt(static_cast<double>(d));
        ASSERT_NEAR(out[(t * s.n_v + h) * d + j], want, 1e-5 * (1.0 + std::fabs(want)))
            << "token " << t << " head " << h << " column " << j;
      }
    }
  for (size_t i = 0; i < state_floats; ++i)
    ASSERT_NEAR(state_out[i], S[i], 1e-5 * (1.0 + std::fabs(S[i]))) << "state " << i;
}

TEST(DeltaNetKernels, GatedNormIsRmsNormTimesWeightTimesSiluOfTheGate) {
  const int n_v = 3, d = 48, n_tokens = 2;
  const float eps = 1e-6f;
  std::vector<float> o = random_floats(static_cast<size_t>(n_tokens) * n_v * d, 21);
  const std::vector<float> before = o;
  const std::vector<float> z = random_floats(o.size(), 22, 2.0f);
  const std::vector<float> norm = random_floats(d, 23);
  emu::launch({n_v, n_tokens, 1}, 64, 0,
              [&] { bonsai_delta_net_gated_norm(o.data(), z.data(), norm.data(), n_v, d, eps); });
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < n_v; ++h) {
      const size_t at = (static_cast<size_t>(t) * n_v + h) * d;
      double ms = 0;
      for (int i = 0; i < d; ++i)
        ms += static_cast<double>(before[at + i]) * before[at + i];
      ms /= d;
      for (int i = 0; i < d; ++i) {
        const double want = before[at + i] / std::sqrt(ms + eps) * norm[i] * silu(z[at + i]);
        EXPECT_NEAR(o[at + i], want, 1e-5 * (1.0 + std::fabs(want)));
      }
    }
}

} // namespace

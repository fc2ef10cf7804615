// The gated delta rule of a qwen35 DeltaNet head (d = 128) over a 512-token
// prefill: the token-by-token recurrence the CPU plugin runs
// (core/src/delta_net/delta_net.cpp), against the chunked form (64-token
// chunks) written out here, which does the same function with
// matrix-shaped work: per chunk of L tokens, with R[t][s] the product of the
// decays after s up to t, g_t that from the chunk's start, h_t = S0^T k_t,
//   u_t = beta_t (v_t - g_t h_t - sum_{s<t} R[t][s] (k_t . k_s) u_s)
//   o_t = (g_t S0^T q_t + sum_{s<=t} R[t][s] (q_t . k_s) u_s) / sqrt(d)
//   S   = g_{L-1} S0 + sum_s R[L-1][s] k_s u_s^T
// (3 L d^2 + 2 L^2 d multiply-adds per chunk, against 3 L d^2 for L steps of
// the recurrence). One iteration is the whole prefill of one head; the
// counter max_abs_diff is the largest difference between the two forms'
// outputs, to show they compute the same function.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "bonsai/core/delta_net.hpp"

namespace {

constexpr int kDim = 128;
constexpr int kTokens = 512;
constexpr int kChunk = 64;

// One head's inputs: q | k | v per token (the conv's output layout for one
// key and one value head), with L2-normed q and k.
struct HeadInputs {
  bonsai::DeltaNetShape shape;
  std::vector<float> act, beta, decay, state;

  HeadInputs() {
    shape.conv_kernel = 4;
    shape.n_k_heads = 1;
    shape.n_v_heads = 1;
    shape.head_dim = kDim;
    shape.eps = 1e-6f;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    act.resize(static_cast<size_t>(kTokens) * shape.conv_dim());
    for (float &v : act)
      v = normal(rng);
    for (int t = 0; t < kTokens; ++t)
      for (int part = 0; part < 2; ++part) { // q, k
        float *x = &act[static_cast<size_t>(t) * shape.conv_dim() + part * kDim];
        double sum = 0;
        for (int i = 0; i < kDim; ++i)
          sum += double{x[i]} * x[i];
        for (int i = 0; i < kDim; ++i)
          x[i] = static_cast<float>(x[i] / std::sqrt(sum + shape.eps));
      }
    for (int t = 0; t < kTokens; ++t) {
      beta.push_back(1.0f / (1.0f + std::exp(-normal(rng))));
      decay.push_back(std::exp(-0.1f * std::abs(normal(rng))));
    }
    state.resize(static_cast<size_t>(kDim) * kDim);
    for (float &v : state)
      v = 0.1f * normal(rng);
  }
  const float *q(int t) const { return &act[static_cast<size_t>(t) * shape.conv_dim()]; }
  const float *k(int t) const { return q(t) + kDim; }
  const float *v(int t) const { return q(t) + 2 * kDim; }
};

void recurrence(const HeadInputs &in, std::vector<float> &state, std::vector<float> &out) {
  std::vector<float> scratch(kDim);
  bonsai::DeltaRuleRun run;
  run.n_tokens = kTokens;
  run.act = in.act.data();
  run.beta = in.beta.data();
  run.decay = in.decay.data();
  run.state_in = state.data();
  run.state_out = state.data();
  run.scratch = scratch.data();
  run.out = out.data();
  bonsai::delta_rule_run(in.shape, run);
}

// Scratch of one chunk: decay products, k.k and q.k, S0^T k, S0^T q and u.
struct ChunkScratch {
  std::vector<float> decays = std::vector<float>(kChunk * kChunk);
  std::vector<float> kk = std::vector<float>(kChunk * kChunk);
  std::vector<float> qk = std::vector<float>(kChunk * kChunk);
  std::vector<float> h = std::vector<float>(kChunk * kDim);
  std::vector<float> p = std::vector<float>(kChunk * kDim);
  std::vector<float> u = std::vector<float>(kChunk * kDim);
};

#if defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void chunk(const HeadInputs &in, int t0, float *state, float *out, ChunkScratch &c) {
  float *R = c.decays.data(), *H = c.h.data(), *P = c.p.data(), *U = c.u.data();
  float from_start[kChunk];
  for (int t = 0; t < kChunk; ++t) {
    const float a = in.decay[static_cast<size_t>(t0 + t)];
    for (int s = 0; s < t; ++s)
      R[t * kChunk + s] = (t > 0 ? R[(t - 1) * kChunk + s] : 1.0f) * a;
    R[t * kChunk + t] = 1.0f;
    from_start[t] = (t > 0 ? from_start[t - 1] : 1.0f) * a;
  }
  std::fill(H, H + kChunk * kDim, 0.0f);
  std::fill(P, P + kChunk * kDim, 0.0f);
  for (int i = 0; i < kDim; ++i) {
    const float *row = state + i * kDim;
    for (int t = 0; t < kChunk; ++t) {
      const float ki = in.k(t0 + t)[i], qi = in.q(t0 + t)[i];
      for (int j = 0; j < kDim; ++j) {
        H[t * kDim + j] += ki * row[j];
        P[t * kDim + j] += qi * row[j];
      }
    }
  }
  for (int t = 0; t < kChunk; ++t)
    for (int s = 0; s <= t; ++s) {
      float kk = 0, qk = 0;
      for (int i = 0; i < kDim; ++i) {
        kk += in.k(t0 + t)[i] * in.k(t0 + s)[i];
        qk += in.q(t0 + t)[i] * in.k(t0 + s)[i];
      }
      c.kk[t * kChunk + s] = kk;
      c.qk[t * kChunk + s] = qk;
    }
  for (int t = 0; t < kChunk; ++t) {
    float *u = U + t * kDim;
    for (int j = 0; j < kDim; ++j)
      u[j] = in.v(t0 + t)[j] - from_start[t] * H[t * kDim + j];
    for (int s = 0; s < t; ++s) {
      const float w = R[t * kChunk + s] * c.kk[t * kChunk + s];
      for (int j = 0; j < kDim; ++j)
        u[j] -= w * U[s * kDim + j];
    }
    for (int j = 0; j < kDim; ++j)
      u[j] *= in.beta[static_cast<size_t>(t0 + t)];
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  for (int t = 0; t < kChunk; ++t) {
    float *o = out + static_cast<size_t>(t0 + t) * kDim;
    for (int j = 0; j < kDim; ++j)
      o[j] = from_start[t] * P[t * kDim + j];
    for (int s = 0; s <= t; ++s) {
      const float w = R[t * kChunk + s] * c.qk[t * kChunk + s];
      for (int j = 0; j < kDim; ++j)
        o[j] += w * U[s * kDim + j];
    }
    for (int j = 0; j < kDim; ++j)
      o[j] *= scale;
  }
  for (int i = 0; i < kDim; ++i) {
    float *row = state + i * kDim;
    for (int j = 0; j < kDim; ++j)
      row[j] *= from_start[kChunk - 1];
    for (int s = 0; s < kChunk; ++s) {
      const float w = R[(kChunk - 1) * kChunk + s] * in.k(t0 + s)[i];
      for (int j = 0; j < kDim; ++j)
        row[j] += w * U[s * kDim + j];
    }
  }
}

void chunked(const HeadInputs &in, std::vector<float> &state, std::vector<float> &out,
             ChunkScratch &scratch) {
  for (int t0 = 0; t0 < kTokens; t0 += kChunk)
    chunk(in, t0, state.data(), out.data(), scratch);
}

float max_abs_diff(const HeadInputs &in) {
  std::vector<float> s1 = in.state, s2 = in.state, o1(kTokens * kDim), o2(kTokens * kDim);
  ChunkScratch scratch;
  recurrence(in, s1, o1);
  chunked(in, s2, o2, scratch);
  float diff = 0;
  for (size_t i = 0; i < o1.size(); ++i)
    diff = std::max(diff, std::abs(o1[i] - o2[i]));
  return diff;
}

void BM_DeltaRule_Recurrence(benchmark::State &st) {
  const HeadInputs in;
  std::vector<float> state, out(kTokens * kDim);
  for (auto _ : st) {
    state = in.state;
    recurrence(in, state, out);
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_DeltaRule_Chunked(benchmark::State &st) {
  const HeadInputs in;
  std::vector<float> state, out(kTokens * kDim);
  ChunkScratch scratch;
  for (auto _ : st) {
    state = in.state;
    chunked(in, state, out, scratch);
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["max_abs_diff"] = max_abs_diff(in);
}

BENCHMARK(BM_DeltaRule_Recurrence)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DeltaRule_Chunked)->Unit(benchmark::kMicrosecond);

} // namespace

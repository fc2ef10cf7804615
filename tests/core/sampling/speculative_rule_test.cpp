// Sampler::sample_against: the speculative sampling rule for a draft that
// proposes one token for sure. Whatever is proposed, the tokens it returns
// must follow the sampler's own distribution p: checked by a chi-square test
// against p computed here by hand (softmax of logits / temperature, then the
// nucleus), over many draws.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bonsai/core/sampling.hpp"

namespace bonsai {
namespace {

const std::vector<float> kLogits = {2.0f, 1.5f, 0.3f, -0.5f, 1.0f, -2.0f};

// p by hand: softmax(logits / t), then the smallest best-first set whose
// mass reaches top_p, renormalized.
std::vector<double> expected_p(double t, double top_p) {
  std::vector<double> p(kLogits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i)
    sum += p[i] = std::exp(kLogits[i] / t);
  for (double &v : p)
    v /= sum;
  std::vector<size_t> order = {0, 1, 4, 2, 3, 5}; // kLogits best first
  double mass = 0;
  size_t keep = 0;
  while (keep < order.size() && mass < top_p)
    mass += p[order[keep++]];
  for (size_t k = keep; k < order.size(); ++k)
    p[order[k]] = 0;
  for (double &v : p)
    v /= mass;
  return p;
}

// Pearson's statistic of `counts` against `p` (cells with p = 0 must be empty).
double chi_square(const std::vector<int> &counts, const std::vector<double> &p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has no probability";
      continue;
    }
    const double e = p[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(SpeculativeRule, AnyProposalKeepsTheSamplersDistribution) {
  struct Setting {
    float t, top_p;
    double critical; // chi-square at 0.999 for the cells with mass, minus one
  };
  // 6 cells: 5 degrees of freedom (20.52); at t 0.7 the nucleus of 0.9 keeps
  // 3 cells (p 0.541, 0.265, 0.129): 2 degrees of freedom (13.82).
  for (const Setting setting : {Setting{1.0f, 1.0f, 20.52}, Setting{0.7f, 0.9f, 13.82}}) {
    const std::vector<double> p = expected_p(setting.t, setting.top_p);
    for (const int32_t proposed : {0, 3, 5, 2}) {
      SamplerParams params;
      params.temperature = setting.t;
      params.top_k = 0;
      params.top_p = setting.top_p;
      params.min_p = 0;
      params.seed = 1000 + static_cast<uint64_t>(proposed);
      Sampler sampler(params);
      const int n = 40000;
      std::vector<int> counts(p.size(), 0);
      int kept = 0;
      for (int i = 0; i < n; ++i) {
        const int32_t token = sampler.sample_against(kLogits, proposed);
        ++counts[static_cast<size_t>(token)];
        kept += token == proposed;
      }
      EXPECT_LT(chi_square(counts, p, n), setting.critical)
          << "t " << setting.t << " top_p " << setting.top_p << " proposed " << proposed;
      // The proposal is kept as often as p gives it.
      EXPECT_NEAR(kept / double(n), p[static_cast<size_t>(proposed)], 0.01);
    }
  }
}

TEST(SpeculativeRule, ADraftDistributionQKeepsTheTargetsP) {
  // A draft model with its own, different distribution q: x ~ q, then the
  // rule. The output must follow p, the target's, whatever q is (even one
  // that puts mass where p has none, after the nucleus).
  const std::vector<float> draft_logits = {-1.0f, 0.5f, 2.5f, 0.0f, -0.5f, 1.0f};
  for (const float top_p : {1.0f, 0.9f}) {
    const float t = top_p < 1.0f ? 0.7f : 1.0f;
    const std::vector<double> p = expected_p(t, top_p);
    SamplerParams target_params;
    target_params.temperature = t;
    target_params.top_k = 0;
    target_params.top_p = top_p;
    target_params.min_p = 0;
    target_params.seed = 77;
    SamplerParams draft_params = target_params;
    draft_params.top_p = 1.0f;
    draft_params.seed = 78;
    Sampler target(target_params), draft(draft_params);
    const std::vector<TokenProb> q = draft.distribution(draft_logits);
    double q_sum = 0;
    for (const TokenProb &x : q)
      q_sum += x.prob;
    ASSERT_NEAR(q_sum, 1.0, 1e-5);
    const int n = 40000;
    std::vector<int> counts(p.size(), 0);
    for (int i = 0; i < n; ++i) {
      const int32_t proposed = draft.draw_from(q);
      ++counts[static_cast<size_t>(target.sample_against(kLogits, proposed, q))];
    }
    EXPECT_LT(chi_square(counts, p, n), top_p < 1.0f ? 13.82 : 20.52) << "top_p " << top_p;
  }
}

TEST(SpeculativeRule, GreedyIgnoresTheProposal) {
  SamplerParams params;
  params.temperature = 0;
  Sampler sampler(params);
  for (const int32_t proposed : {0, 1, 5})
    EXPECT_EQ(sampler.sample_against(kLogits, proposed), 0);
}

} // namespace
} // namespace bonsai

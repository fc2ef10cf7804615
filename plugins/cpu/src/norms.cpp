#include "norms.hpp"

#include <cmath>

namespace bonsai::cpu {

void rmsnorm_rows(const float *x, float *out, int n_rows, int64_t dim, const float *w, float eps) {
  for (int t = 0; t < n_rows; ++t) {
    const float *xr = x + t * dim;
    float *yr = out + t * dim;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < dim; ++i)
      sum_sq += static_cast<double>(xr[i]) * xr[i];
    const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i)
      yr[i] = static_cast<float>(static_cast<double>(xr[i]) * inv * w[i]);
  }
}

void rope_table(const int32_t *positions, int n, const std::vector<double> &inv_freq,
                double magnitude, std::vector<double> &cos_out, std::vector<double> &sin_out) {
  const size_t half = inv_freq.size();
  cos_out.resize(static_cast<size_t>(n) * half);
  sin_out.resize(static_cast<size_t>(n) * half);
  for (size_t i = 0; i < half; ++i) {
    for (int t = 0; t < n; ++t) {
      const double angle = positions[t] * inv_freq[i];
      cos_out[static_cast<size_t>(t) * half + i] = magnitude * std::cos(angle);
      sin_out[static_cast<size_t>(t) * half + i] = magnitude * std::sin(angle);
    }
  }
}

void norm_rope_heads(const HeadNormRope &job) {
  const int half = (job.n_rot > 0 ? job.n_rot : job.head_dim) / 2;
  std::vector<double> normed(static_cast<size_t>(job.head_dim));
  for (int t = 0; t < job.n_tokens; ++t) {
    const double *c = job.cos + static_cast<size_t>(t) * half;
    const double *s = job.sin + static_cast<size_t>(t) * half;
    for (int h = 0; h < job.n_heads; ++h) {
      float *v = job.v + t * job.ld + static_cast<int64_t>(h) * job.head_dim;
      double sum_sq = 0.0;
      for (int i = 0; i < job.head_dim; ++i)
        sum_sq += static_cast<double>(v[i]) * v[i];
      const double inv = 1.0 / std::sqrt(sum_sq / job.head_dim + job.eps);
      for (int i = 0; i < job.head_dim; ++i)
        normed[static_cast<size_t>(i)] = static_cast<double>(v[i]) * inv * job.weight[i];
      for (int i = 0; i < half; ++i) {
        const double a = normed[static_cast<size_t>(i)];
        const double b = normed[static_cast<size_t>(i + half)];
        v[i] = static_cast<float>(a * c[i] - b * s[i]);
        v[i + half] = static_cast<float>(a * s[i] + b * c[i]);
      }
      for (int i = 2 * half; i < job.head_dim; ++i)
        v[i] = static_cast<float>(normed[static_cast<size_t>(i)]);
    }
  }
}

} // namespace bonsai::cpu

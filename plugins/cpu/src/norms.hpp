#pragma once
// RMSNorm and NEOX RoPE. Computed in double and rounded once to f32 for
// every kernel set: they cost O(n * dim), nothing next to the matmuls.
#include <cstdint>
#include <vector>

namespace bonsai::cpu {

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w for n_rows rows of `dim`
// values (both row strides are `dim`). out may equal x.
void rmsnorm_rows(const float *x, float *out, int n_rows, int64_t dim, const float *w, float eps);

// magnitude * cos/sin of angle = position * inv_freq[i], i < head_dim / 2,
// for each of the n positions: [n][head_dim / 2].
void rope_table(const int32_t *positions, int n, const std::vector<double> &inv_freq,
                double magnitude, std::vector<double> &cos_out, std::vector<double> &sin_out);

// In place, for each token t and head: v = rope(rmsnorm(v) * w) with NEOX
// pairs (i, i + n_rot / 2) over the first n_rot values and token t's angles;
// the rest of a head is only normed. Rows have stride ld.
struct HeadNormRope {
  float *v = nullptr;
  int64_t ld = 0;
  int n_tokens = 0;
  int n_heads = 0;
  int head_dim = 0;
  const float *weight = nullptr; // head_dim
  float eps = 0.0f;
  int n_rot = 0;               // rotated values per head; 0 = head_dim
  const double *cos = nullptr; // [n_tokens][n_rot / 2]
  const double *sin = nullptr;
};
void norm_rope_heads(const HeadNormRope &job);

} // namespace bonsai::cpu

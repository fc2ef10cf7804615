#pragma once
// An independent, deliberately plain float64 Qwen3 forward pass (written from
// docs/architecture.md, "The model") over dequantized weights. Used as the oracle for small
// random models in the plugin conformance suite. Not meant to be fast.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "bonsai/core/formats.hpp"

namespace bonsai::test {

struct RefMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> w; // [rows][cols]
};

// Dequantizes `rows` rows of `cols` values of a GGUF tensor.
inline RefMatrix dequantize_matrix(GgmlType type, const void *data, int64_t rows, int64_t cols) {
  RefMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.w.resize(static_cast<size_t>(rows * cols));
  std::vector<float> row(static_cast<size_t>(cols));
  const size_t row_size = row_bytes(type, cols);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(type, static_cast<const uint8_t *>(data) + r * row_size, row.data(), cols);
    for (int64_t c = 0; c < cols; ++c)
      m.w[static_cast<size_t>(r * cols + c)] = row[static_cast<size_t>(c)];
  }
  return m;
}

// y = W x, in double.
inline std::vector<double> ref_matvec(const RefMatrix &m, const std::vector<double> &x) {
  std::vector<double> y(static_cast<size_t>(m.rows), 0.0);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c)
      y[static_cast<size_t>(r)] +=
          m.w[static_cast<size_t>(r * m.cols + c)] * x[static_cast<size_t>(c)];
  return y;
}

// v / sqrt(mean(v^2) + eps) * w, in double.
inline std::vector<double> ref_rmsnorm(const std::vector<double> &v, const std::vector<double> &w,
                                       double eps) {
  double ss = 0.0;
  for (double e : v)
    ss += e * e;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(v.size()) + eps);
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = v[i] * inv * w[i];
  return out;
}

struct RefDims {
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  int n_vocab = 0;
  double rms_eps = 1e-6;
  double rope_base = 1e6;
};

struct RefLayer {
  std::vector<double> attn_norm, q_norm, k_norm, ffn_norm;
  RefMatrix wq, wk, wv, wo, gate, up, down;
};

struct RefModel {
  RefDims dims;
  RefMatrix token_embd;
  RefMatrix lm_head;
  std::vector<double> output_norm;
  std::vector<RefLayer> layers;
};

class RefForward {
public:
  explicit RefForward(const RefModel &model)
      : m_(model), keys_(model.layers.size()), values_(model.layers.size()) {}

  // Appends one token at the next position and returns its logits.
  std::vector<double> step(int32_t token) {
    const RefDims &d = m_.dims;
    if (token < 0 || token >= d.n_vocab)
      throw std::out_of_range("RefForward: token id out of range");
    const int64_t pos = static_cast<int64_t>(keys_[0].size());
    std::vector<double> x(m_.token_embd.w.begin() + token * d.n_embd,
                          m_.token_embd.w.begin() + (token + 1) * d.n_embd);
    for (size_t l = 0; l < m_.layers.size(); ++l)
      layer(l, pos, x);
    return matvec(m_.lm_head, rmsnorm(x, m_.output_norm));
  }

private:
  static std::vector<double> matvec(const RefMatrix &m, const std::vector<double> &x) {
    return ref_matvec(m, x);
  }
  std::vector<double> rmsnorm(const std::vector<double> &v, const std::vector<double> &w) const {
    return ref_rmsnorm(v, w, m_.dims.rms_eps);
  }

  // Per-head RMSNorm then NEOX RoPE: pairs (i, i + head_dim / 2).
  void norm_rope(std::vector<double> &v, int n_heads, const std::vector<double> &w,
                 int64_t pos) const {
    const int hd = m_.dims.head_dim;
    for (int h = 0; h < n_heads; ++h) {
      std::vector<double> head(v.begin() + h * hd, v.begin() + (h + 1) * hd);
      head = rmsnorm(head, w);
      for (int i = 0; i < hd / 2; ++i) {
        const double angle = static_cast<double>(pos) * std::pow(m_.dims.rope_base, -2.0 * i / hd);
        const double a = head[static_cast<size_t>(i)];
        const double b = head[static_cast<size_t>(i + hd / 2)];
        v[static_cast<size_t>(h * hd + i)] = a * std::cos(angle) - b * std::sin(angle);
        v[static_cast<size_t>(h * hd + i + hd / 2)] = a * std::sin(angle) + b * std::cos(angle);
      }
    }
  }

  void layer(size_t l, int64_t pos, std::vector<double> &x) {
    const RefDims &d = m_.dims;
    const RefLayer &w = m_.layers[l];
    const int hd = d.head_dim;
    const std::vector<double> h = rmsnorm(x, w.attn_norm);
    std::vector<double> q = matvec(w.wq, h);
    std::vector<double> k = matvec(w.wk, h);
    std::vector<double> v = matvec(w.wv, h);
    norm_rope(q, d.n_head, w.q_norm, pos);
    norm_rope(k, d.n_head_kv, w.k_norm, pos);
    keys_[l].push_back(k);
    values_[l].push_back(v);

    std::vector<double> attn(static_cast<size_t>(d.n_head * hd), 0.0);
    const int group = d.n_head / d.n_head_kv;
    for (int head = 0; head < d.n_head; ++head) {
      const int kvh = head / group;
      std::vector<double> scores;
      double max_score = -INFINITY;
      for (size_t j = 0; j < keys_[l].size(); ++j) {
        double s = 0.0;
        for (int i = 0; i < hd; ++i)
          s += q[static_cast<size_t>(head * hd + i)] *
               keys_[l][j][static_cast<size_t>(kvh * hd + i)];
        s /= std::sqrt(static_cast<double>(hd));
        scores.push_back(s);
        max_score = std::max(max_score, s);
      }
      double denom = 0.0;
      for (double &s : scores) {
        s = std::exp(s - max_score);
        denom += s;
      }
      for (size_t j = 0; j < scores.size(); ++j)
        for (int i = 0; i < hd; ++i)
          attn[static_cast<size_t>(head * hd + i)] +=
              scores[j] / denom * values_[l][j][static_cast<size_t>(kvh * hd + i)];
    }
    const std::vector<double> o = matvec(w.wo, attn);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += o[i];

    const std::vector<double> h2 = rmsnorm(x, w.ffn_norm);
    const std::vector<double> g = matvec(w.gate, h2);
    const std::vector<double> u = matvec(w.up, h2);
    std::vector<double> act(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    const std::vector<double> down = matvec(w.down, act);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += down[i];
  }

  const RefModel &m_;
  std::vector<std::vector<std::vector<double>>> keys_;   // [layer][pos][kv_dim]
  std::vector<std::vector<std::vector<double>>> values_; // [layer][pos][kv_dim]
};

} // namespace bonsai::test

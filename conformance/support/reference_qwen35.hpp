#pragma once
// An independent, deliberately plain float64 forward pass of the `qwen35`
// architecture (Bonsai-27B: gated DeltaNet + gated attention), written from
// docs/models.md. It reads the GGUF by tensor name, not through ModelSpec, so
// the loader is checked too. The gated DeltaNet runs either as the one-token
// recurrence or in the exact chunk form, so each checks the other. The
// multi-token-prediction (MTP) layer after the trunk, when the file has one,
// runs on its own (RefQwen35::mtp_step, docs/models.md "The MTP layer"). Not
// meant to be fast.
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bonsai/core/gguf.hpp"
#include "reference_forward.hpp"

namespace bonsai::test {

struct RefQwen35Layer {
  bool recurrent = false;
  std::vector<double> attn_norm, post_norm;
  RefMatrix gate, up, down;
  // Gated attention.
  RefMatrix wq, wk, wv, wo; // wq: 2 * D * n_head rows, query and gate interleaved per head
  std::vector<double> q_norm, k_norm;
  // Gated DeltaNet.
  RefMatrix qkv, z, beta, alpha, out;
  std::vector<double> conv; // [conv_dim][K], conv[c * K + K - 1] multiplies the newest input
  std::vector<double> dt_bias, a, ssm_norm;
};

// The MTP layer: a gated attention layer (`layer`, with its own KV cache)
// after c = eh_proj [RMSNorm(e; enorm) ; RMSNorm(h; hnorm)], and its head.
struct RefQwen35Mtp {
  RefQwen35Layer layer;
  RefMatrix eh_proj; // n_embd rows of 2 * n_embd
  std::vector<double> enorm, hnorm;
  RefMatrix embed;               // nextn.embed_tokens, else token_embd
  RefMatrix head;                // nextn.shared_head_head, else the LM head
  std::vector<double> head_norm; // nextn.shared_head_norm, else output_norm
};

struct RefQwen35Model {
  int n_embd = 0, n_layer = 0, n_head = 0, n_kv = 0, head_dim = 0, n_rot = 0, n_ff = 0;
  int n_vocab = 0;
  int conv_k = 0, d = 0, h_k = 0, h_v = 0; // conv width, GDN head size, q/k heads, value heads
  int sections[4] = {0, 0, 0, 0};
  double eps = 1e-6, rope_base = 1e4;
  RefMatrix token_embd, lm_head;
  std::vector<double> output_norm;
  std::vector<RefQwen35Layer> layers;
  std::optional<RefQwen35Mtp> mtp; // the first MTP layer, when the file has one

  int key_dim() const { return h_k * d; }
  int value_dim() const { return h_v * d; }
  int conv_dim() const { return 2 * key_dim() + value_dim(); }

  static RefQwen35Model load(const gguf::File &file) {
    RefQwen35Model m;
    const auto u = [&](const std::string &key) {
      return static_cast<int>(file.get_u64("qwen35." + key));
    };
    m.n_embd = u("embedding_length");
    const int n_nextn = file.find("qwen35.nextn_predict_layers") ? u("nextn_predict_layers") : 0;
    m.n_layer = u("block_count") - n_nextn;
    m.n_head = u("attention.head_count");
    m.n_kv = u("attention.head_count_kv");
    m.head_dim = u("attention.key_length");
    m.n_rot = u("rope.dimension_count");
    m.n_ff = u("feed_forward_length");
    m.conv_k = u("ssm.conv_kernel");
    m.d = u("ssm.state_size");
    m.h_v = u("ssm.time_step_rank");
    m.h_k = u("ssm.group_count");
    m.eps = file.get_f64("qwen35.attention.layer_norm_rms_epsilon");
    m.rope_base = file.get_f64("qwen35.rope.freq_base");
    const auto &sec = file.find("qwen35.rope.dimension_sections")->as_array("sections");
    for (int i = 0; i < 4; ++i)
      m.sections[i] = static_cast<int>(sec.items[static_cast<size_t>(i)].as_i64("section"));
    const int interval =
        file.find("qwen35.full_attention_interval") ? u("full_attention_interval") : 4;

    const auto tensor = [&](const std::string &name) {
      const gguf::TensorInfo *t = file.find_tensor(name);
      if (t == nullptr)
        throw std::runtime_error("reference: missing tensor " + name);
      return t;
    };
    const auto matrix = [&](const std::string &name) {
      const gguf::TensorInfo *t = tensor(name);
      return dequantize_matrix(t->type(), t->data, t->n_elements() / t->dims[0], t->dims[0]);
    };
    const auto vec = [&](const std::string &name) { return matrix(name).w; };

    m.token_embd = matrix("token_embd.weight");
    m.n_vocab = static_cast<int>(m.token_embd.rows);
    m.lm_head = file.find_tensor("output.weight") ? matrix("output.weight") : m.token_embd;
    m.output_norm = vec("output_norm.weight");
    // Layer `l`: its norms, MLP and mixer (gated DeltaNet or attention).
    const auto layer = [&](int l, bool recurrent) {
      const std::string p = "blk." + std::to_string(l) + ".";
      RefQwen35Layer L;
      L.recurrent = recurrent;
      L.attn_norm = vec(p + "attn_norm.weight");
      L.post_norm = vec(p + "post_attention_norm.weight");
      L.gate = matrix(p + "ffn_gate.weight");
      L.up = matrix(p + "ffn_up.weight");
      L.down = matrix(p + "ffn_down.weight");
      if (L.recurrent) {
        L.qkv = matrix(p + "attn_qkv.weight");
        L.z = matrix(p + "attn_gate.weight");
        L.beta = matrix(p + "ssm_beta.weight");
        L.alpha = matrix(p + "ssm_alpha.weight");
        L.out = matrix(p + "ssm_out.weight");
        L.conv = vec(p + "ssm_conv1d.weight");
        L.dt_bias = vec(p + "ssm_dt.bias");
        L.a = vec(p + "ssm_a");
        L.ssm_norm = vec(p + "ssm_norm.weight");
      } else {
        L.wq = matrix(p + "attn_q.weight");
        L.wk = matrix(p + "attn_k.weight");
        L.wv = matrix(p + "attn_v.weight");
        L.wo = matrix(p + "attn_output.weight");
        L.q_norm = vec(p + "attn_q_norm.weight");
        L.k_norm = vec(p + "attn_k_norm.weight");
      }
      return L;
    };
    for (int l = 0; l < m.n_layer; ++l)
      m.layers.push_back(layer(l, (l + 1) % interval != 0));
    if (n_nextn > 0) { // an attention layer, then the nextn tensors
      const std::string n = "blk." + std::to_string(m.n_layer) + ".nextn.";
      RefQwen35Mtp mtp;
      mtp.layer = layer(m.n_layer, false);
      mtp.eh_proj = matrix(n + "eh_proj.weight");
      mtp.enorm = vec(n + "enorm.weight");
      mtp.hnorm = vec(n + "hnorm.weight");
      const auto has = [&](const std::string &name) { return file.find_tensor(name) != nullptr; };
      mtp.embed = has(n + "embed_tokens.weight") ? matrix(n + "embed_tokens.weight") : m.token_embd;
      mtp.head =
          has(n + "shared_head_head.weight") ? matrix(n + "shared_head_head.weight") : m.lm_head;
      mtp.head_norm =
          has(n + "shared_head_norm.weight") ? vec(n + "shared_head_norm.weight") : m.output_norm;
      m.mtp = std::move(mtp);
    }
    return m;
  }
};

// What a sequence carries between steps: the attention layers' keys and
// values, and each DeltaNet layer's last K-1 conv inputs and d x d states.
struct RefQwen35State {
  int64_t position = 0;
  std::vector<std::vector<std::vector<double>>> keys, values; // [layer][pos][n_kv * D]
  std::vector<std::vector<double>> conv;                      // [layer][(K-1) * conv_dim]
  std::vector<std::vector<double>> ssm; // [layer][h_v * d * d], S[h][i][j]: i key, j value
  std::vector<std::vector<double>> mtp_keys, mtp_values; // the MTP layer's, [entry][n_kv * D]
};

// What one MTP entry gives: the logits of the token after its input token,
// and its output-normed hidden state (the h of a chained next entry).
struct RefMtpOutput {
  std::vector<double> logits, hidden;
};

class RefQwen35 {
public:
  // chunk = 0: the one-token recurrence; else the chunk form with chunks of
  // that many tokens.
  explicit RefQwen35(const RefQwen35Model &model, int chunk = 0) : m_(model), chunk_(chunk) {
    reset();
  }

  void reset() {
    const size_t n = m_.layers.size();
    s_ = RefQwen35State{};
    s_.keys.assign(n, {});
    s_.values.assign(n, {});
    s_.conv.assign(n, std::vector<double>(static_cast<size_t>((m_.conv_k - 1) * m_.conv_dim())));
    s_.ssm.assign(n, std::vector<double>(static_cast<size_t>(m_.h_v * m_.d * m_.d)));
  }

  const RefQwen35State &state() const { return s_; }
  void set_state(const RefQwen35State &state) { s_ = state; }

  // The output-normed last hidden state of every token of the last
  // forward(), [tokens][n_embd]: what the LM head multiplies, and the h an
  // MTP entry reads.
  const std::vector<std::vector<double>> &hidden() const { return hidden_; }

  // One entry of the MTP layer at position `pos` (entries in increasing
  // positions; llama.cpp's pairing: token t_pos with h = the trunk's hidden
  // state at pos - 1, zeros at 0): c = eh_proj [RMSNorm(e; enorm) ;
  // RMSNorm(h; hnorm)], then gated attention over the MTP's own entries and
  // the MLP, then its head.
  RefMtpOutput mtp_step(int32_t token, const std::vector<double> &h, int64_t pos) {
    if (!m_.mtp)
      throw std::runtime_error("RefQwen35: the model has no MTP layer");
    const RefQwen35Mtp &mtp = *m_.mtp;
    if (token < 0 || token >= m_.n_vocab)
      throw std::out_of_range("RefQwen35: token id out of range");
    const std::vector<double> e(mtp.embed.w.begin() + int64_t{token} * m_.n_embd,
                                mtp.embed.w.begin() + (int64_t{token} + 1) * m_.n_embd);
    std::vector<double> both = rmsnorm(e, mtp.enorm);
    const std::vector<double> hn = rmsnorm(h, mtp.hnorm);
    both.insert(both.end(), hn.begin(), hn.end());
    std::vector<double> x = matvec(mtp.eh_proj, both);
    const std::vector<double> mixed =
        attend(mtp.layer, s_.mtp_keys, s_.mtp_values, rmsnorm(x, mtp.layer.attn_norm), pos);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += mixed[i];
    mlp(mtp.layer, x);
    RefMtpOutput out;
    out.hidden = rmsnorm(x, mtp.head_norm);
    out.logits = matvec(mtp.head, out.hidden);
    return out;
  }

  // Runs `tokens` at the next positions, layer by layer over all of them;
  // returns the logits of every token, [tokens][n_vocab].
  std::vector<std::vector<double>> forward(const std::vector<int32_t> &tokens) {
    std::vector<std::vector<double>> x;
    for (int32_t t : tokens) {
      if (t < 0 || t >= m_.n_vocab)
        throw std::out_of_range("RefQwen35: token id out of range");
      x.emplace_back(m_.token_embd.w.begin() + int64_t{t} * m_.n_embd,
                     m_.token_embd.w.begin() + (int64_t{t} + 1) * m_.n_embd);
    }
    for (size_t l = 0; l < m_.layers.size(); ++l) {
      const RefQwen35Layer &L = m_.layers[l];
      std::vector<std::vector<double>> normed;
      for (const auto &v : x)
        normed.push_back(rmsnorm(v, L.attn_norm));
      const auto mixed = L.recurrent ? delta_net(l, normed) : attention(l, normed);
      for (size_t t = 0; t < x.size(); ++t) {
        for (size_t i = 0; i < x[t].size(); ++i)
          x[t][i] += mixed[t][i];
        mlp(L, x[t]);
      }
    }
    s_.position += static_cast<int64_t>(tokens.size());
    std::vector<std::vector<double>> logits;
    hidden_.clear();
    for (const auto &v : x) {
      hidden_.push_back(rmsnorm(v, m_.output_norm));
      logits.push_back(matvec(m_.lm_head, hidden_.back()));
    }
    return logits;
  }

private:
  static double silu(double v) { return v / (1.0 + std::exp(-v)); }
  static double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
  static double softplus(double v) { return v > 20.0 ? v : std::log1p(std::exp(v)); }

  static std::vector<double> matvec(const RefMatrix &m, const std::vector<double> &x) {
    return ref_matvec(m, x);
  }

  // x += down(silu(gate u) * up u), u = RMSNorm(x; post_attention_norm).
  void mlp(const RefQwen35Layer &L, std::vector<double> &x) const {
    const std::vector<double> u = rmsnorm(x, L.post_norm);
    const std::vector<double> g = matvec(L.gate, u);
    const std::vector<double> up = matvec(L.up, u);
    std::vector<double> act(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      act[i] = silu(g[i]) * up[i];
    const std::vector<double> down = matvec(L.down, act);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += down[i];
  }
  std::vector<double> rmsnorm(const std::vector<double> &v, const std::vector<double> &w) const {
    return ref_rmsnorm(v, w, m_.eps);
  }

  // Whether M-RoPE gives pair i a text token's position (else the extra
  // position, 0 for text).
  bool pair_rotates(int i) const {
    const int period = m_.sections[0] + m_.sections[1] + m_.sections[2] + m_.sections[3];
    const int s = i % period;
    return (s % 3 == 0 && s < 3 * m_.sections[0]) || (s % 3 == 1 && s < 3 * m_.sections[1]) ||
           (s % 3 == 2 && s < 3 * m_.sections[2]);
  }

  // RMSNorm of one head, then NeoX rotation of its first n_rot values.
  void norm_rope(double *head, const std::vector<double> &w, int64_t pos) const {
    std::vector<double> h(head, head + m_.head_dim);
    h = rmsnorm(h, w);
    const int half = m_.n_rot / 2;
    for (int i = 0; i < half; ++i) {
      const double p = pair_rotates(i) ? static_cast<double>(pos) : 0.0;
      const double angle = p * std::pow(m_.rope_base, -2.0 * i / m_.n_rot);
      const double a = h[static_cast<size_t>(i)], b = h[static_cast<size_t>(i + half)];
      h[static_cast<size_t>(i)] = a * std::cos(angle) - b * std::sin(angle);
      h[static_cast<size_t>(i + half)] = a * std::sin(angle) + b * std::cos(angle);
    }
    std::copy(h.begin(), h.end(), head);
  }

  std::vector<std::vector<double>> attention(size_t l, const std::vector<std::vector<double>> &xs) {
    std::vector<std::vector<double>> result;
    for (size_t t = 0; t < xs.size(); ++t)
      result.push_back(attend(m_.layers[l], s_.keys[l], s_.values[l], xs[t],
                              s_.position + static_cast<int64_t>(t)));
    return result;
  }

  // One token of a gated attention layer at `pos`: its key and value join
  // `keys` and `values`, and it attends over all of them.
  std::vector<double> attend(const RefQwen35Layer &L, std::vector<std::vector<double>> &keys,
                             std::vector<std::vector<double>> &values, const std::vector<double> &x,
                             int64_t pos) const {
    const int D = m_.head_dim;
    const std::vector<double> qg = matvec(L.wq, x);
    std::vector<double> k = matvec(L.wk, x);
    const std::vector<double> v = matvec(L.wv, x);
    for (int j = 0; j < m_.n_kv; ++j)
      norm_rope(k.data() + j * D, L.k_norm, pos);
    keys.push_back(k);
    values.push_back(v);
    std::vector<double> o(static_cast<size_t>(m_.n_head * D), 0.0);
    const int group = m_.n_head / m_.n_kv;
    for (int h = 0; h < m_.n_head; ++h) {
      std::vector<double> q(qg.begin() + 2 * D * h, qg.begin() + 2 * D * h + D);
      norm_rope(q.data(), L.q_norm, pos);
      const int j = h / group;
      std::vector<double> scores;
      double top = -INFINITY;
      for (const auto &key : keys) {
        double s = 0.0;
        for (int i = 0; i < D; ++i)
          s += q[static_cast<size_t>(i)] * key[static_cast<size_t>(j * D + i)];
        scores.push_back(s / std::sqrt(static_cast<double>(D)));
        top = std::max(top, scores.back());
      }
      double total = 0.0;
      for (double &s : scores)
        total += (s = std::exp(s - top));
      for (size_t p = 0; p < scores.size(); ++p)
        for (int i = 0; i < D; ++i)
          o[static_cast<size_t>(h * D + i)] +=
              scores[p] / total * values[p][static_cast<size_t>(j * D + i)];
      for (int i = 0; i < D; ++i)
        o[static_cast<size_t>(h * D + i)] *= sigmoid(qg[static_cast<size_t>(2 * D * h + D + i)]);
    }
    return matvec(L.wo, o);
  }

  // One token's conv, q/k/v split and L2 norms, beta and gate.
  struct GdnInput {
    std::vector<double> q, k, v, z, beta, g; // q/k: h_k * d, v/z: h_v * d, beta/g: h_v
  };

  GdnInput gdn_input(size_t l, const std::vector<double> &x) {
    const RefQwen35Layer &L = m_.layers[l];
    const int C = m_.conv_dim(), K = m_.conv_k;
    const std::vector<double> mix = matvec(L.qkv, x);
    std::vector<double> &window = s_.conv[l]; // (K-1) rows of conv_dim, oldest first
    std::vector<double> c(static_cast<size_t>(C));
    for (int ch = 0; ch < C; ++ch) {
      double y = L.conv[static_cast<size_t>(ch * K + K - 1)] * mix[static_cast<size_t>(ch)];
      for (int i = 0; i < K - 1; ++i)
        y += L.conv[static_cast<size_t>(ch * K + i)] * window[static_cast<size_t>(i * C + ch)];
      c[static_cast<size_t>(ch)] = silu(y);
    }
    window.erase(window.begin(), window.begin() + C);
    window.insert(window.end(), mix.begin(), mix.end());

    GdnInput in;
    const int kd = m_.key_dim();
    in.q.assign(c.begin(), c.begin() + kd);
    in.k.assign(c.begin() + kd, c.begin() + 2 * kd);
    in.v.assign(c.begin() + 2 * kd, c.end());
    for (std::vector<double> *qk : {&in.q, &in.k})
      for (int h = 0; h < m_.h_k; ++h) {
        double ss = 0.0;
        for (int i = 0; i < m_.d; ++i)
          ss += (*qk)[static_cast<size_t>(h * m_.d + i)] * (*qk)[static_cast<size_t>(h * m_.d + i)];
        const double inv = 1.0 / std::sqrt(ss + m_.eps);
        for (int i = 0; i < m_.d; ++i)
          (*qk)[static_cast<size_t>(h * m_.d + i)] *= inv;
      }
    in.z = matvec(L.z, x);
    in.beta = matvec(L.beta, x);
    in.g = matvec(L.alpha, x);
    for (int h = 0; h < m_.h_v; ++h) {
      in.beta[static_cast<size_t>(h)] = sigmoid(in.beta[static_cast<size_t>(h)]);
      in.g[static_cast<size_t>(h)] =
          softplus(in.g[static_cast<size_t>(h)] + L.dt_bias[static_cast<size_t>(h)]) *
          L.a[static_cast<size_t>(h)];
    }
    return in;
  }

  // o = S^T q / sqrt(d) after S <- e^g S; S += k (beta (v - S^T k))^T.
  void recurrence(double *S, const double *q, const double *k, const double *v, double beta,
                  double g, double *o) const {
    const int d = m_.d;
    const double decay = std::exp(g);
    for (int i = 0; i < d * d; ++i)
      S[i] *= decay;
    std::vector<double> delta(static_cast<size_t>(d));
    for (int j = 0; j < d; ++j) {
      double sk = 0.0;
      for (int i = 0; i < d; ++i)
        sk += S[i * d + j] * k[i];
      delta[static_cast<size_t>(j)] = beta * (v[j] - sk);
    }
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j)
        S[i * d + j] += k[i] * delta[static_cast<size_t>(j)];
    for (int j = 0; j < d; ++j) {
      double sq = 0.0;
      for (int i = 0; i < d; ++i)
        sq += S[i * d + j] * q[i];
      o[j] = sq / std::sqrt(static_cast<double>(d));
    }
  }

  // The chunk form of the same rule over tokens [first, first + n) of one
  // value head: o for each, S advanced past them.
  void chunk(double *S, const std::vector<GdnInput> &in, size_t first, size_t n, int h,
             std::vector<std::vector<double>> &o) const {
    const int d = m_.d, kh = h % m_.h_k;
    const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(d));
    const auto q = [&](size_t t) { return in[first + t].q.data() + kh * d; };
    const auto k = [&](size_t t) { return in[first + t].k.data() + kh * d; };
    const auto v = [&](size_t t) { return in[first + t].v.data() + h * d; };
    const auto beta = [&](size_t t) { return in[first + t].beta[static_cast<size_t>(h)]; };
    const auto dot = [d](const double *a, const double *b) {
      double s = 0.0;
      for (int i = 0; i < d; ++i)
        s += a[i] * b[i];
      return s;
    };
    std::vector<double> gamma(n);
    for (size_t t = 0; t < n; ++t)
      gamma[t] = (t ? gamma[t - 1] : 0.0) + in[first + t].g[static_cast<size_t>(h)];
    // T = (I + A)^-1 with A[t][s] = beta_t (k_t . k_s) e^(G_t - G_s), s < t:
    // forward substitution, row by row.
    std::vector<std::vector<double>> T(n, std::vector<double>(n, 0.0));
    for (size_t t = 0; t < n; ++t) {
      T[t][t] = 1.0;
      for (size_t s = 0; s < t; ++s) {
        double acc = 0.0;
        for (size_t r = s; r < t; ++r)
          acc += beta(t) * dot(k(t), k(r)) * std::exp(gamma[t] - gamma[r]) * T[r][s];
        T[t][s] = -acc;
      }
    }
    // V'_t = U_t - S0^T W_t, U = T (beta v), W = T (beta e^G k).
    std::vector<std::vector<double>> vp(n, std::vector<double>(static_cast<size_t>(d), 0.0));
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> w(static_cast<size_t>(d), 0.0);
      for (size_t s = 0; s <= t; ++s)
        for (int i = 0; i < d; ++i) {
          vp[t][static_cast<size_t>(i)] += T[t][s] * beta(s) * v(s)[i];
          w[static_cast<size_t>(i)] += T[t][s] * beta(s) * std::exp(gamma[s]) * k(s)[i];
        }
      for (int j = 0; j < d; ++j)
        for (int i = 0; i < d; ++i)
          vp[t][static_cast<size_t>(j)] -= S[i * d + j] * w[static_cast<size_t>(i)];
    }
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> &out = o[first + t];
      for (int j = 0; j < d; ++j) {
        double acc = 0.0;
        for (int i = 0; i < d; ++i)
          acc += S[i * d + j] * q(t)[i];
        acc *= std::exp(gamma[t]) * inv_sqrt_d;
        for (size_t s = 0; s <= t; ++s)
          acc += std::exp(gamma[t] - gamma[s]) * dot(q(t), k(s)) * inv_sqrt_d *
                 vp[s][static_cast<size_t>(j)];
        out[static_cast<size_t>(h * d + j)] = acc;
      }
    }
    const double total = std::exp(gamma[n - 1]);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        double acc = total * S[i * d + j];
        for (size_t s = 0; s < n; ++s)
          acc += std::exp(gamma[n - 1] - gamma[s]) * k(s)[i] * vp[s][static_cast<size_t>(j)];
        S[i * d + j] = acc;
      }
  }

  std::vector<std::vector<double>> delta_net(size_t l, const std::vector<std::vector<double>> &xs) {
    const RefQwen35Layer &L = m_.layers[l];
    const int d = m_.d;
    std::vector<GdnInput> in;
    for (const auto &x : xs)
      in.push_back(gdn_input(l, x));
    std::vector<std::vector<double>> o(xs.size(),
                                       std::vector<double>(static_cast<size_t>(m_.value_dim())));
    for (int h = 0; h < m_.h_v; ++h) {
      double *S = s_.ssm[l].data() + static_cast<size_t>(h) * d * d;
      if (chunk_ == 0) {
        const int kh = h % m_.h_k;
        for (size_t t = 0; t < xs.size(); ++t)
          recurrence(S, in[t].q.data() + kh * d, in[t].k.data() + kh * d, in[t].v.data() + h * d,
                     in[t].beta[static_cast<size_t>(h)], in[t].g[static_cast<size_t>(h)],
                     o[t].data() + h * d);
      } else {
        for (size_t first = 0; first < xs.size(); first += static_cast<size_t>(chunk_))
          chunk(S, in, first, std::min(static_cast<size_t>(chunk_), xs.size() - first), h, o);
      }
    }
    std::vector<std::vector<double>> result;
    for (size_t t = 0; t < xs.size(); ++t) {
      std::vector<double> y(static_cast<size_t>(m_.value_dim()));
      for (int h = 0; h < m_.h_v; ++h) {
        const std::vector<double> head(o[t].begin() + h * d, o[t].begin() + (h + 1) * d);
        const std::vector<double> normed = rmsnorm(head, L.ssm_norm);
        for (int i = 0; i < d; ++i)
          y[static_cast<size_t>(h * d + i)] =
              normed[static_cast<size_t>(i)] * silu(in[t].z[static_cast<size_t>(h * d + i)]);
      }
      result.push_back(matvec(L.out, y));
    }
    return result;
  }

  const RefQwen35Model &m_;
  int chunk_ = 0;
  RefQwen35State s_;
  std::vector<std::vector<double>> hidden_;
};

} // namespace bonsai::test

#include "random_model.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "bonsai/core/formats.hpp"

namespace bonsai::conformance {
namespace {

uint16_t random_scale(double scale, Rng &rng) {
  const double magnitude = scale * rng.uniform(0.5, 1.5);
  return f32_to_fp16(static_cast<float>(rng.integer(0, 3) == 0 ? -magnitude : magnitude));
}

} // namespace

bonsai_weight_desc HostWeight::desc(uint32_t flags) const {
  bonsai_weight_desc d{};
  d.struct_size = sizeof(d);
  d.type = type;
  d.cols = cols;
  d.rows = rows;
  d.data = bytes.data();
  d.nbytes = bytes.size();
  d.flags = flags;
  d.name = name.c_str();
  return d;
}

test::RefMatrix HostWeight::dequantized() const {
  return test::dequantize_matrix(static_cast<GgmlType>(type), bytes.data(), rows, cols);
}

std::vector<double> HostWeight::dequantized_vector() const {
  return dequantized().w;
}

HostWeight random_weight(uint32_t type, int64_t rows, int64_t cols, double scale, Rng &rng,
                         int max_q2_code) {
  HostWeight w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  const GgmlType t = static_cast<GgmlType>(type);
  const size_t row_size = row_bytes(t, cols);
  w.bytes.resize(row_size * static_cast<size_t>(rows));
  if (t == GgmlType::Q1_0) {
    for (size_t b = 0; b < w.bytes.size() / sizeof(BlockQ1_0); ++b) {
      BlockQ1_0 block;
      block.d = random_scale(scale, rng);
      for (uint8_t &byte : block.signs)
        byte = static_cast<uint8_t>(rng.integer(0, 255));
      std::memcpy(w.bytes.data() + b * sizeof(block), &block, sizeof(block));
    }
  } else if (t == GgmlType::Q2_0) {
    for (size_t b = 0; b < w.bytes.size() / sizeof(BlockQ2_0); ++b) {
      BlockQ2_0 block;
      block.d = random_scale(scale, rng);
      for (uint8_t &byte : block.codes) {
        byte = 0;
        for (int k = 0; k < 4; ++k)
          byte = static_cast<uint8_t>(byte | rng.integer(0, max_q2_code) << (2 * k));
      }
      std::memcpy(w.bytes.data() + b * sizeof(block), &block, sizeof(block));
    }
  } else {
    std::vector<float> values(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float &v : values)
        v = static_cast<float>(rng.uniform(-scale, scale) * 1.7); // variance like Q1's +-scale
      quantize_row(t, values.data(), w.bytes.data() + static_cast<size_t>(r) * row_size, cols);
    }
  }
  return w;
}

HostWeight random_norm(int64_t n, Rng &rng) {
  HostWeight w;
  w.type = static_cast<uint32_t>(GgmlType::F32);
  w.rows = 1;
  w.cols = n;
  w.bytes.resize(static_cast<size_t>(n) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(rng.uniform(0.8, 1.2));
    std::memcpy(w.bytes.data() + i * sizeof(float), &v, sizeof(v));
  }
  return w;
}

HostModel random_model(const ModelShape &s, uint32_t linear_type, Rng &rng) {
  HostModel m;
  m.shape = s;
  const int64_t q_dim = int64_t{s.n_head} * s.head_dim;
  const int64_t kv_dim = int64_t{s.n_head_kv} * s.head_dim;
  // Scales keep activations of order one: outputs sum `cols` terms.
  const auto matrix = [&](int64_t rows, int64_t cols, const std::string &name) {
    HostWeight w = random_weight(linear_type, rows, cols, 1.0 / std::sqrt(double(cols)), rng);
    w.name = name;
    return w;
  };
  const auto norm = [&](int64_t n, const std::string &name) {
    HostWeight w = random_norm(n, rng);
    w.name = name;
    return w;
  };
  m.token_embd = random_weight(linear_type, s.n_vocab, s.n_embd, 1.0, rng);
  m.token_embd.name = "token_embd.weight";
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    HostLayer layer;
    layer.attn_norm = norm(s.n_embd, p + "attn_norm.weight");
    layer.wq = matrix(q_dim, s.n_embd, p + "attn_q.weight");
    layer.wk = matrix(kv_dim, s.n_embd, p + "attn_k.weight");
    layer.wv = matrix(kv_dim, s.n_embd, p + "attn_v.weight");
    layer.q_norm = norm(s.head_dim, p + "attn_q_norm.weight");
    layer.k_norm = norm(s.head_dim, p + "attn_k_norm.weight");
    layer.wo = matrix(s.n_embd, q_dim, p + "attn_output.weight");
    layer.ffn_norm = norm(s.n_embd, p + "ffn_norm.weight");
    layer.gate = matrix(s.n_ff, s.n_embd, p + "ffn_gate.weight");
    layer.up = matrix(s.n_ff, s.n_embd, p + "ffn_up.weight");
    layer.down = matrix(s.n_embd, s.n_ff, p + "ffn_down.weight");
    m.layers.push_back(std::move(layer));
  }
  m.output_norm = norm(s.n_embd, "output_norm.weight");
  m.lm_head = matrix(s.n_vocab, s.n_embd, "output.weight");
  return m;
}

test::RefModel HostModel::reference() const {
  test::RefModel r;
  r.dims.n_embd = shape.n_embd;
  r.dims.n_layer = shape.n_layer;
  r.dims.n_head = shape.n_head;
  r.dims.n_head_kv = shape.n_head_kv;
  r.dims.head_dim = shape.head_dim;
  r.dims.n_ff = shape.n_ff;
  r.dims.n_vocab = shape.n_vocab;
  r.dims.rms_eps = shape.rms_eps;
  r.dims.rope_base = shape.rope_base;
  r.token_embd = token_embd.dequantized();
  r.lm_head = lm_head.dequantized();
  r.output_norm = output_norm.dequantized_vector();
  for (const HostLayer &l : layers) {
    test::RefLayer rl;
    rl.attn_norm = l.attn_norm.dequantized_vector();
    rl.q_norm = l.q_norm.dequantized_vector();
    rl.k_norm = l.k_norm.dequantized_vector();
    rl.ffn_norm = l.ffn_norm.dequantized_vector();
    rl.wq = l.wq.dequantized();
    rl.wk = l.wk.dequantized();
    rl.wv = l.wv.dequantized();
    rl.wo = l.wo.dequantized();
    rl.gate = l.gate.dequantized();
    rl.up = l.up.dequantized();
    rl.down = l.down.dequantized();
    r.layers.push_back(std::move(rl));
  }
  return r;
}

UploadedModel::UploadedModel(const bonsai_backend_api &api, bonsai_context *ctx,
                             const HostModel &model)
    : api_(api), ctx_(ctx) {
  const ModelShape &s = model.shape;
  desc_.struct_size = sizeof(desc_);
  desc_.n_embd = s.n_embd;
  desc_.n_layer = s.n_layer;
  desc_.n_head = s.n_head;
  desc_.n_head_kv = s.n_head_kv;
  desc_.head_dim = s.head_dim;
  desc_.n_ff = s.n_ff;
  desc_.n_vocab = s.n_vocab;
  desc_.rms_eps = s.rms_eps;
  desc_.rope_freq_base = s.rope_base;
  desc_.token_embd = upload(model.token_embd);
  desc_.output_norm = upload(model.output_norm);
  desc_.lm_head = upload(model.lm_head);
  for (const HostLayer &l : model.layers) {
    bonsai_layer_weights lw{};
    lw.struct_size = sizeof(lw);
    lw.attn_norm = upload(l.attn_norm);
    lw.wq = upload(l.wq);
    lw.wk = upload(l.wk);
    lw.wv = upload(l.wv);
    lw.q_norm = upload(l.q_norm);
    lw.k_norm = upload(l.k_norm);
    lw.wo = upload(l.wo);
    lw.ffn_norm = upload(l.ffn_norm);
    lw.w_gate = upload(l.gate);
    lw.w_up = upload(l.up);
    lw.w_down = upload(l.down);
    layers_.push_back(lw);
  }
  desc_.layers = layers_.data();
}

const bonsai_weight *UploadedModel::upload(const HostWeight &w) {
  const uint32_t flags = (uploads_++ % 2 == 0) ? BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT : 0u;
  const bonsai_weight_desc d = w.desc(flags);
  bonsai_weight *handle = nullptr;
  const bonsai_status status = api_.upload_weight(ctx_, &d, &handle);
  if (status != BONSAI_OK || handle == nullptr)
    throw std::runtime_error("upload_weight of " + w.name + " failed with status " +
                             std::to_string(status) + ": " + api_.last_error(ctx_));
  return handle;
}

} // namespace bonsai::conformance

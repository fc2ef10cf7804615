#pragma once
// Random weights and small random Qwen3 models for the conformance checks:
// the bytes the plugin gets, and the same weights dequantized for the
// float64 reference forward.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "reference_forward.hpp"

namespace bonsai::conformance {

class Rng {
public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine_);
  }
  int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(engine_); }

private:
  std::mt19937_64 engine_;
};

// A weight as GGUF stores it: rows of `cols` values of ggml type `type`.
struct HostWeight {
  uint32_t type = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> bytes;
  std::string name;

  bonsai_weight_desc desc(uint32_t flags) const;
  test::RefMatrix dequantized() const;
  std::vector<double> dequantized_vector() const; // rows == 1
};

// Random weights with values of magnitude ~scale. Q1_0/Q2_0 are made from
// random blocks directly (random signs or codes 0..max_q2_code, f16 scales of
// either sign); other types quantize uniform random floats.
HostWeight random_weight(uint32_t type, int64_t rows, int64_t cols, double scale, Rng &rng,
                         int max_q2_code = 2);
// An f32 norm vector with values in [0.8, 1.2].
HostWeight random_norm(int64_t n, Rng &rng);

struct ModelShape {
  int n_embd = 256;
  int n_layer = 2;
  int n_head = 4;
  int n_head_kv = 2;
  int head_dim = 64;
  int n_ff = 384;
  int n_vocab = 320;
  float rms_eps = 1e-6f;
  float rope_base = 10000.0f; // small base: angles vary a lot over few positions
};

struct HostLayer {
  HostWeight attn_norm, wq, wk, wv, q_norm, k_norm, wo, ffn_norm, gate, up, down;
};

struct HostModel {
  ModelShape shape;
  HostWeight token_embd, output_norm, lm_head;
  std::vector<HostLayer> layers;

  test::RefModel reference() const;
};

// All matrices (embedding and LM head included) of type `linear_type`.
HostModel random_model(const ModelShape &shape, uint32_t linear_type, Rng &rng);

// A HostModel uploaded to one context (alternating borrowed and copied
// uploads, so both paths run). The HostModel must outlive the context.
class UploadedModel {
public:
  // Throws std::runtime_error when an upload fails.
  UploadedModel(const bonsai_backend_api &api, bonsai_context *ctx, const HostModel &model);
  const bonsai_model_desc &desc() const { return desc_; }
  bonsai_status bind() const { return api_.bind_model(ctx_, &desc_); }

private:
  const bonsai_weight *upload(const HostWeight &w);

  const bonsai_backend_api &api_;
  bonsai_context *ctx_;
  std::vector<bonsai_layer_weights> layers_;
  bonsai_model_desc desc_{};
  int uploads_ = 0;
};

} // namespace bonsai::conformance

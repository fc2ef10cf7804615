#include "bound_model.hpp"

#include <cstring>

#include "bonsai/core/formats.hpp"

namespace bonsai::conformance {

std::vector<int32_t> random_tokens(int n, int n_vocab, Rng &rng) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int32_t &t : tokens)
    t = rng.integer(0, n_vocab - 1);
  return tokens;
}

BoundSetup bind_random_model(const bonsai_backend_api &api, const CheckOptions &options,
                             uint32_t type, Rng &rng, CheckResult &r) {
  BoundSetup s;
  test::ContextConfig config;
  config.options = options.context_options;
  config.n_threads = options.n_threads;
  config.max_context = 32;
  config.max_batch = 16;
  s.ctx = std::make_unique<test::ContextHandle>(api, config);
  if (api.supports_type(s.ctx->get(), type) != BONSAI_OK) {
    s.skip_reason = std::string(type_name(type)) + " is not supported by this plugin";
    return s;
  }
  s.model = random_model(ModelShape{}, type, rng);
  s.uploaded = std::make_unique<UploadedModel>(api, s.ctx->get(), s.model);
  const bonsai_status status = s.uploaded->bind();
  if (status == BONSAI_ERR_UNSUPPORTED)
    s.skip_reason = "bind_model is UNSUPPORTED: the host runs layers through matmul";
  else if (!r.expect(status == BONSAI_OK, "bind_model failed: " + s.ctx->last_error()))
    s.skip_reason = "bind_model failed";
  return s;
}

bool skip_unbound(const BoundSetup &s, CheckResult &r) {
  if (!s.skip_reason)
    return false;
  r.skipped = r.passed();
  r.note(*s.skip_reason);
  return true;
}

uint32_t preferred_type(const PluginChecker &checker) {
  for (GgmlType t : {GgmlType::Q1_0, GgmlType::Q2_0, GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16,
                     GgmlType::F32})
    if (checker.supports(static_cast<uint32_t>(t)))
      return static_cast<uint32_t>(t);
  return static_cast<uint32_t>(GgmlType::F32);
}

bool bitwise_equal(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace bonsai::conformance

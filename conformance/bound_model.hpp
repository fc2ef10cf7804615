#pragma once
// What the model-level checks share: a context with a small random model
// bound, random prompts and bit-exact comparison.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin_checks.hpp"
#include "plugin_loader.hpp"
#include "random_model.hpp"

namespace bonsai::conformance {

std::vector<int32_t> random_tokens(int n, int n_vocab, Rng &rng);

// A context with one random model bound, or the reason it could not be.
struct BoundSetup {
  std::unique_ptr<test::ContextHandle> ctx;
  HostModel model;
  std::unique_ptr<UploadedModel> uploaded;
  std::optional<std::string> skip_reason;
};

// A context (max_context 32, max_batch 16) with a random model of `type`;
// records a failure in `r` when bind_model fails.
BoundSetup bind_random_model(const bonsai_backend_api &api, const CheckOptions &options,
                             uint32_t type, Rng &rng, CheckResult &r);

// When the setup could not bind a model: marks `r` skipped (unless it already
// failed), notes why and returns true.
bool skip_unbound(const BoundSetup &s, CheckResult &r);

// The first type of the list the plugin supports (1-bit first).
uint32_t preferred_type(const PluginChecker &checker);

bool bitwise_equal(const std::vector<float> &a, const std::vector<float> &b);

} // namespace bonsai::conformance

#include "model/plugin_layer_runner.hpp"

#include <numeric>

#include <fmt/format.h>

#include "plugins/hidden_states.hpp"

namespace bonsai::host {

PluginLayerRunner::PluginLayerRunner(const PluginContext &context, int32_t n_layer)
    : context_(context), n_layer_(n_layer) {
  const auto &api = context_.api();
  const std::pair<bool, const char *> needed[] = {
      {api.begin_step != nullptr, "begin_step"}, {api.encode_layer != nullptr, "encode_layer"},
      {api.lm_head != nullptr, "lm_head"},       {api.end_step != nullptr, "end_step"},
      {api.kv_reset != nullptr, "kv_reset"},     {api.kv_truncate != nullptr, "kv_truncate"},
  };
  for (const auto &[present, name] : needed)
    if (!present)
      context_.library().fail(
          fmt::format("bind_model succeeded but the API table lacks '{}'", name));
  hidden_states_ = hidden_states_extension(api);
}

bool PluginLayerRunner::run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                                 const std::atomic<bool> &cancel) {
  const auto &api = context_.api();
  bonsai_context *ctx = context_.get();
  const auto n_tokens = static_cast<int32_t>(tokens.size());
  positions_.resize(tokens.size());
  std::iota(positions_.begin(), positions_.end(), length_);

  bonsai_step_desc step{};
  step.struct_size = sizeof step;
  step.n_tokens = n_tokens;
  step.token_ids = tokens.data();
  step.positions = positions_.data();
  context_.check(api.begin_step(ctx, &step), "begin_step");
  for (int32_t layer = 0; layer < n_layer_; ++layer) {
    // An open step is discarded by the next begin_step (ABI rule), so
    // leaving here keeps the KV cache as it was.
    if (cancel.load(std::memory_order_relaxed))
      return false;
    context_.check(api.encode_layer(ctx, layer), fmt::format("encode_layer({})", layer));
  }
  if (outputs.hidden != nullptr) {
    if (hidden_states_ == nullptr)
      context_.library().fail("the plugin has no hidden-states extension (ABI 1.3)");
    bonsai_hidden_states_desc desc{};
    desc.struct_size = sizeof desc;
    desc.first_token = 0;
    desc.n_outputs = n_tokens;
    desc.hidden = outputs.hidden;
    context_.check(hidden_states_->hidden_states(ctx, &desc), "hidden_states");
  }
  if (outputs.count > 0) {
    bonsai_lm_head_desc head{};
    head.struct_size = sizeof head;
    head.first_token = outputs.first;
    head.n_outputs = outputs.count;
    head.logits = outputs.logits;
    head.argmax = outputs.argmax;
    context_.check(api.lm_head(ctx, &head), "lm_head");
  }
  context_.check(api.end_step(ctx), "end_step");
  length_ += n_tokens;
  return true;
}

void PluginLayerRunner::truncate(int32_t n_keep) {
  const auto &api = context_.api();
  if (n_keep == 0)
    context_.check(api.kv_reset(context_.get()), "kv_reset");
  else
    context_.check(api.kv_truncate(context_.get(), n_keep), fmt::format("kv_truncate({})", n_keep));
  length_ = n_keep;
}

} // namespace bonsai::host

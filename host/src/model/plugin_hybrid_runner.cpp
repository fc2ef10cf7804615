#include "model/plugin_hybrid_runner.hpp"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "bonsai/engine.hpp"
#include "common/log_internal.hpp"

#include "model/checkpoint_policy.hpp"

namespace bonsai::host {

PluginHybridRunner::PluginHybridRunner(const PluginContext &context,
                                       const bonsai_layer_kinds_extension &kinds, int32_t n_layer,
                                       int32_t n_batch)
    : context_(context), kinds_(kinds), steps_(context, n_layer), n_batch_(n_batch) {
  uint64_t state_bytes = 0;
  context_.check(kinds_.state_bytes(context_.get(), &state_bytes), "state_bytes");
  max_checkpoints_ = checkpoint_policy::capacity(static_cast<size_t>(state_bytes));
}

PluginHybridRunner::~PluginHybridRunner() {
  for (const Saved &saved : checkpoints_)
    kinds_.checkpoint_free(context_.get(), saved.id); // the context frees them anyway
}

void PluginHybridRunner::free_checkpoint(const Saved &saved) {
  context_.check(kinds_.checkpoint_free(context_.get(), saved.id), "checkpoint_free");
}

void PluginHybridRunner::save_checkpoint() {
  const int32_t length = steps_.kv_length();
  if (!checkpoints_.empty() && checkpoints_.back().position == length)
    return;
  // Best effort: the step has ended, and a checkpoint missed (out of memory)
  // only means running more tokens again after a later cut.
  try {
    if (checkpoints_.size() >= max_checkpoints_) {
      free_checkpoint(checkpoints_.front());
      checkpoints_.erase(checkpoints_.begin());
    }
    Saved saved{length, 0};
    context_.check(kinds_.checkpoint_save(context_.get(), 0, &saved.id), "checkpoint_save");
    checkpoints_.push_back(saved);
  } catch (const PluginError &error) {
    logger().warn("qwen35: no checkpoint at position {}: {}", length, error.what());
  }
}

bool PluginHybridRunner::run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                                  const std::atomic<bool> &cancel) {
  // A step the plugin never ends leaves its recurrent state as it was (ABI
  // 1.2), so a cancelled step needs no repair here.
  if (!steps_.run_step(tokens, outputs, cancel))
    return false;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (checkpoint_policy::due(steps_.kv_length(), static_cast<int32_t>(tokens.size())))
    save_checkpoint();
  return true;
}

void PluginHybridRunner::truncate(int32_t n_keep) {
  if (n_keep >= steps_.kv_length())
    return;
  try {
    rewind(n_keep);
  } catch (...) {
    // Stopped part-way: the cache holds a prefix of the tokens; keep that.
    tokens_.resize(static_cast<size_t>(steps_.kv_length()));
    throw;
  }
}

void PluginHybridRunner::rewind(int32_t n_keep) {
  while (!checkpoints_.empty() && checkpoints_.back().position > n_keep) {
    free_checkpoint(checkpoints_.back());
    checkpoints_.pop_back();
  }
  if (checkpoints_.empty()) {
    steps_.truncate(0);
  } else {
    const Saved &from = checkpoints_.back();
    context_.check(kinds_.checkpoint_restore(context_.get(), from.id, 0),
                   fmt::format("checkpoint_restore({})", from.id));
    steps_.follow_length(from.position);
  }
  // Run the tokens from the checkpoint to n_keep again; their KV rows get
  // the values they had.
  const std::atomic<bool> never{false};
  while (steps_.kv_length() < n_keep) {
    const int32_t from = steps_.kv_length();
    const int32_t n = std::min(n_batch_, n_keep - from);
    steps_.run_step(std::span(tokens_).subspan(static_cast<size_t>(from), static_cast<size_t>(n)),
                    StepOutputs{}, never);
  }
  tokens_.resize(static_cast<size_t>(n_keep));
}

} // namespace bonsai::host

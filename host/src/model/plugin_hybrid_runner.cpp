#include "model/plugin_hybrid_runner.hpp"

#include <algorithm>
#include <atomic>

namespace bonsai::host {

PluginHybridRunner::PluginHybridRunner(const PluginContext &context,
                                       const bonsai_layer_kinds_extension &kinds, int32_t n_layer,
                                       int32_t n_batch)
    : steps_(context, n_layer), n_batch_(n_batch),
      checkpoints_(
          context, kinds, 1,
          {.reset = [this](int32_t) { steps_.truncate(0); },
           .length = [this](int32_t) { return steps_.kv_length(); },
           .advance =
               [this](int32_t, std::span<const int32_t> tokens) {
                 // A step the plugin never ends leaves its state as
                 // it was, so no cancel is needed here.
                 const std::atomic<bool> never{false};
                 for (size_t done = 0; done < tokens.size();) {
                   const size_t n = std::min(static_cast<size_t>(n_batch_), tokens.size() - done);
                   steps_.run_step(tokens.subspan(done, n), StepOutputs{}, never);
                   done += n;
                 }
               },
           .restored = [this](int32_t, int32_t position) { steps_.follow_length(position); }}) {}

bool PluginHybridRunner::run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                                  const std::atomic<bool> &cancel) {
  // A step the plugin never ends leaves its recurrent state as it was (ABI
  // 1.2), so a cancelled step needs no repair here.
  if (outputs.may_cut_back)
    checkpoints_.before_cut_back_step(0, 0);
  if (!steps_.run_step(tokens, outputs, cancel))
    return false;
  checkpoints_.advanced(0, 0, tokens, outputs.may_cut_back);
  return true;
}

void PluginHybridRunner::truncate(int32_t n_keep) {
  checkpoints_.truncate(0, 0, n_keep);
}

} // namespace bonsai::host

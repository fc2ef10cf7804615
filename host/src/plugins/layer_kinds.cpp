#include "plugins/layer_kinds.hpp"

#include <algorithm>

#include "common/log_internal.hpp"

namespace bonsai::host {

const bonsai_layer_kinds_extension *qwen35_layer_kinds(const bonsai_backend_api &api) {
  // ABI 1.2's size of the extension: a later plugin's is longer, never shorter.
  constexpr size_t kV12Size = offsetof(bonsai_layer_kinds_extension, checkpoint_position) +
                              sizeof(bonsai_layer_kinds_extension::checkpoint_position);
  const bonsai_extension *e = bonsai_find_extension(&api, BONSAI_EXTENSION_LAYER_KINDS);
  if (e == nullptr || e->struct_size < kV12Size)
    return nullptr;
  const auto *kinds = reinterpret_cast<const bonsai_layer_kinds_extension *>(e);
  const bool complete = kinds->supports_mixer != nullptr && kinds->bind_layered_model != nullptr &&
                        kinds->state_bytes != nullptr && kinds->checkpoint_save != nullptr &&
                        kinds->checkpoint_restore != nullptr && kinds->checkpoint_free != nullptr;
  if (!complete || kinds->supports_mixer(BONSAI_MIXER_GATED_ATTENTION) != BONSAI_OK ||
      kinds->supports_mixer(BONSAI_MIXER_GATED_DELTA_NET) != BONSAI_OK)
    return nullptr;
  return kinds;
}

void prefer_qwen35_layer_kinds(std::vector<SelectedPlugin> &plugins) {
  const auto runs_layers = [](const SelectedPlugin &p) {
    return qwen35_layer_kinds(p.library->api()) != nullptr;
  };
  const auto first = std::find_if(plugins.begin(), plugins.end(), runs_layers);
  if (first == plugins.begin() || first == plugins.end())
    return; // the first choice runs the layers, or none does
  for (auto it = plugins.begin(); it != first; ++it)
    logger().info("backend 'auto': {} runs no qwen35 layers itself (ABI 1.2 layer kinds); {} "
                  "comes first for this model",
                  it->info.name, first->info.name);
  std::stable_partition(plugins.begin(), plugins.end(), runs_layers);
}

} // namespace bonsai::host

#pragma once
// The ABI 1.2 layer-kinds extension as the host uses it: whether a plugin
// runs qwen35 layers itself, and `auto`'s preference for one that does.
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "plugins/plugin_catalog.hpp"

namespace bonsai::host {

// The plugin's layer-kinds extension when it runs both qwen35 layer kinds
// (and its struct has every function this host calls), else nullptr.
const bonsai_layer_kinds_extension *qwen35_layer_kinds(const bonsai_backend_api &api);

// For a qwen35 file under `--backend auto`: the plugins that run its layers
// themselves go first, each keeping its place among its own kind; a plugin
// passed over is logged with the reason. Without the layer kinds a plugin
// still runs the model (the host's layers and its matmul), only slower, so
// none is dropped: it stays as a fallback.
void prefer_qwen35_layer_kinds(std::vector<SelectedPlugin> &plugins);

} // namespace bonsai::host

#pragma once
// Finding plugin files and choosing one for an engine (docs/architecture.md,
// "Choosing a plugin").
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "plugins/plugin_library.hpp"

namespace bonsai::host {

// A plugin chosen for an engine: loaded, probed OK.
struct SelectedPlugin {
  std::shared_ptr<const PluginLibrary> library;
  PluginInfo info;
};

// Resolves one backend spec ("auto", "NAME", a path, or a comma list of
// those) into the usable plugins, in the order to try them: "auto" gives
// every usable plugin file in `dirs`, highest preference (stated by its
// probe) first; a list gives its elements' plugins in order, each file once.
// The first is the choice; the rest are fallbacks should it fail to load
// the model. A single NAME or path fails with its own PluginError; a list
// (or "auto") logs each skipped candidate at info level and fails with every
// reason when none is usable.
std::vector<SelectedPlugin> select_plugins(const std::string &spec,
                                           const std::vector<std::filesystem::path> &dirs);

// True for a spec that names a file rather than a backend.
bool spec_is_path(const std::string &spec);

} // namespace bonsai::host

#pragma once
// Finding plugin files and choosing one for an engine (docs/architecture.md,
// "Choosing a plugin").
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "plugin_library.hpp"

namespace bonsai::host {

// A plugin chosen for an engine: loaded, probed OK.
struct SelectedPlugin {
  std::shared_ptr<const PluginLibrary> library;
  PluginInfo info;
};

// Resolves one backend spec ("auto", "NAME", a path, or a comma list of
// those) and returns the first usable plugin. "auto" takes, of every plugin
// file in `dirs`, the usable one with the highest preference its probe
// states. A single NAME or path fails with its own PluginError; a list (or
// "auto") logs each skipped candidate at info level and fails with every
// reason when none is usable.
SelectedPlugin select_plugin(const std::string &spec,
                             const std::vector<std::filesystem::path> &dirs);

// True for a spec that names a file rather than a backend.
bool spec_is_path(const std::string &spec);

} // namespace bonsai::host

#pragma once
// Which build of the plugin is running: the GNU build ID of the binary this
// code is linked into (the linker's hash of its contents), so that the
// tuner's cache is measured again by every new build. Falls back to the
// plugin's version where the binary has no build ID.
#include <string>

namespace bonsai::cuda {

// "gnu-<hex>" or "version-<fallback>".
std::string plugin_build_id(const std::string &fallback);

} // namespace bonsai::cuda

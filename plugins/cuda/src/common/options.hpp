#pragma once
// Context options from bonsai_context_desc::options ("key=value;key=value").
#include <string>
#include <vector>

namespace bonsai::cuda {

struct ContextOptions {
  // "reference": every launch issued one by one (no CUDA graph), the plain
  // path to compare against. "auto" (default): decode steps replay a
  // captured CUDA graph. Both compute in f32.
  bool use_graphs = true;
  bool ptx_cache = true;             // ptx_cache=off disables the disk cache
  std::vector<std::string> warnings; // unknown keys, malformed entries
};

// Throws PluginError(INVALID_ARGUMENT) for a bad value of a known key.
ContextOptions parse_options(const char *options);

} // namespace bonsai::cuda

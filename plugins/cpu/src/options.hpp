#pragma once
// Plugin options from bonsai_context_desc::options ("key=value;key=value")
// and the BONSAI_CPU_KERNELS environment variable.
#include <string>
#include <vector>

namespace bonsai::cpu {

enum class KernelChoice {
  Auto,      // best set the CPU supports (the default)
  Reference, // scalar, exact f32 results
  Avx2,      // AVX2 even where AVX-512 is available
  Avx512,    // AVX-512 BW+VNNI; an error where the CPU lacks it
};

struct ContextOptions {
  KernelChoice kernels = KernelChoice::Auto;
  std::string kernels_source = "default"; // "options", "BONSAI_CPU_KERNELS" or "default"
  std::vector<std::string> warnings;      // unknown keys, malformed entries
};

// Parses the options string; `env_kernels` is the value of BONSAI_CPU_KERNELS
// (NULL if unset) and applies only when the options name no kernel set.
// Throws PluginError(INVALID_ARGUMENT) for a bad value of a known key.
ContextOptions parse_options(const char *options, const char *env_kernels);

const char *kernel_choice_name(KernelChoice choice);

} // namespace bonsai::cpu

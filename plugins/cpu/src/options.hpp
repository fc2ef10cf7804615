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
  AvxVnni,   // AVX2 with AVX-VNNI dot products; an error where the CPU lacks it
  Neon,      // AArch64 Advanced SIMD (ARMv8.0); an error on other architectures
  DotProd,   // NEON with SDOT (ARMv8.2 dotprod); an error where the CPU lacks it
  I8mm,      // dotprod with SMMLA (i8mm); an error where the CPU lacks it
};

// The KV cache's element type (option kv=...).
enum class KvChoice {
  F32, // the default: exact keys and values
  F16, // half the memory and the bytes read per key (long contexts decode
       // ~1.7x faster); an error where the kernel set's attention cannot read it
};

struct ContextOptions {
  KernelChoice kernels = KernelChoice::Auto;
  KvChoice kv = KvChoice::F32;
  std::string kernels_source = "default"; // "options", "BONSAI_CPU_KERNELS" or "default"
  std::vector<std::string> warnings;      // unknown keys, malformed entries
};

// Parses the options string; `env_kernels` is the value of BONSAI_CPU_KERNELS
// (NULL if unset) and applies only when the options name no kernel set.
// Throws PluginError(INVALID_ARGUMENT) for a bad value of a known key.
ContextOptions parse_options(const char *options, const char *env_kernels);

const char *kernel_choice_name(KernelChoice choice);
const char *kv_choice_name(KvChoice choice);

} // namespace bonsai::cpu

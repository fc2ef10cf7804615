#pragma once
// Shared set-up of the CPU plugin benchmarks: loads the plugin through its
// ABI (as a host does) and fills weights with random bytes of real formats.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../../conformance/support/plugin_loader.hpp"
#include "bonsai/core/formats.hpp"

namespace bonsai::bench {

// $BONSAI_PLUGIN, else the CPU plugin of the build tree this program is in
// (bin/ and lib/bonsai/plugins/ are siblings).
inline std::string cpu_plugin_path() {
  if (const char *env = std::getenv("BONSAI_PLUGIN"); env != nullptr && *env != '\0')
    return env;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  return (exe.parent_path().parent_path() / "lib/bonsai/plugins/libbonsai_cpu.so").string();
}

inline const test::PluginLibrary &cpu_plugin() {
  static const test::PluginLibrary library(cpu_plugin_path());
  return library;
}

// Worker threads: $BONSAI_BENCH_THREADS, default 2.
inline int bench_threads() {
  const char *env = std::getenv("BONSAI_BENCH_THREADS");
  return env != nullptr ? std::atoi(env) : 2;
}

// Random blocks of a quantized type: random signs/codes (0..2), f16 scales
// of magnitude `scale`. Same bytes moved and same work as real weights.
inline void fill_random_blocks(GgmlType type, uint8_t *dst, size_t nbytes, double scale,
                               uint64_t seed) {
  std::mt19937_64 rng(seed);
  const TypeTraits traits = traits_of(type);
  const uint16_t d = f32_to_fp16(static_cast<float>(scale));
  for (size_t at = 0; at + traits.block_bytes <= nbytes; at += traits.block_bytes) {
    std::memcpy(dst + at, &d, sizeof(d));
    for (size_t i = 2; i < traits.block_bytes; i += 8) {
      uint64_t bits = rng();
      if (type == GgmlType::Q2_0 ||
          type == GgmlType::Q2_0_G64) // codes 0..2 only, as ternary models store
        for (int k = 0; k < 32; ++k)
          if (((bits >> (2 * k)) & 3) == 3)
            bits &= ~(uint64_t{1} << (2 * k));
      std::memcpy(dst + i, &bits, std::min<size_t>(8, traits.block_bytes - i));
    }
  }
}

} // namespace bonsai::bench

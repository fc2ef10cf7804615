#pragma once
// x86-64 features detected once per process (CPUID); immutable afterwards.
#include <string>

namespace bonsai::cpu {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vnni = false;
  bool avxvnni = false; // AVX-VNNI: vpdpbusd on 256-bit registers (Alder Lake, Zen 5)
  std::string brand;    // e.g. "AMD EPYC 7B13 64-Core Processor"

  bool has_avx2_set() const { return avx2 && fma && f16c; }
  bool has_avx512_set() const { return has_avx2_set() && avx512f && avx512bw && avx512vnni; }
  bool has_avxvnni_set() const { return has_avx2_set() && avxvnni; }
  std::string describe() const; // "avx2 fma f16c" etc.
};

// Detected on first use (thread-safe static initialization), then read-only.
const CpuFeatures &cpu_features();

} // namespace bonsai::cpu

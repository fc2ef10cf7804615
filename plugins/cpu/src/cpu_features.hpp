#pragma once
// The SIMD features bonsai's kernel sets use, detected once per process
// (CPUID on x86-64, the kernel's HWCAP bits on AArch64); immutable afterwards.
#include <string>

namespace bonsai::cpu {

struct CpuFeatures {
  // x86-64
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vnni = false;
  bool avxvnni = false; // AVX-VNNI: vpdpbusd on 256-bit registers (Alder Lake, Zen 5)
  // AArch64 (HWCAP_ASIMD, HWCAP_ASIMDDP, HWCAP2_I8MM)
  bool asimd = false;   // Advanced SIMD (NEON): every ARMv8-A Linux CPU
  bool asimddp = false; // SDOT/UDOT (ARMv8.2 dotprod: Cortex-A76/A55, Neoverse N1 on)
  bool i8mm = false;    // SMMLA/UMMLA (ARMv8.6 i8mm: Neoverse V1/N2, Cortex-X2/A710 on)
  std::string brand;    // e.g. "AMD EPYC 7B13 64-Core Processor"

  bool has_avx2_set() const { return avx2 && fma && f16c; }
  bool has_avx512_set() const { return has_avx2_set() && avx512f && avx512bw && avx512vnni; }
  bool has_avxvnni_set() const { return has_avx2_set() && avxvnni; }
  bool has_neon_set() const { return asimd; }
  bool has_dotprod_set() const { return asimd && asimddp; }
  bool has_i8mm_set() const { return has_dotprod_set() && i8mm; }
  std::string describe() const; // "avx2 fma f16c" or "asimd asimddp i8mm" etc.
};

// Detected on first use (thread-safe static initialization), then read-only.
const CpuFeatures &cpu_features();

} // namespace bonsai::cpu

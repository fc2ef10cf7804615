#include "cpu_features.hpp"

#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace bonsai::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
std::string read_brand() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000004u)
    return "x86-64 CPU";
  char text[49] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    unsigned regs[4] = {};
    __get_cpuid(0x80000002u + leaf, &regs[0], &regs[1], &regs[2], &regs[3]);
    std::memcpy(text + leaf * 16, regs, sizeof(regs));
  }
  std::string brand(text);
  const auto first = brand.find_first_not_of(' ');
  const auto last = brand.find_last_not_of(' ');
  return first == std::string::npos ? "x86-64 CPU" : brand.substr(first, last - first + 1);
}

void detect_simd(CpuFeatures &f) {
  // __builtin_cpu_supports also checks that the OS saves the wide registers.
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  // CPUID.(EAX=7, ECX=1):EAX bit 4; the YMM state it needs is checked with AVX2.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.avxvnni = f.avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4));
}
#elif defined(__aarch64__)
// Linux has no brand string on ARM; the main ID register of cpu0 (exported
// by the kernel since 4.11) names the implementer and the part.
std::string read_brand() {
  unsigned long long midr = 0;
  if (FILE *file = std::fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "r")) {
    if (std::fscanf(file, "%llx", &midr) != 1)
      midr = 0;
    std::fclose(file);
  }
  if (midr == 0)
    return "AArch64 CPU";
  char text[64];
  std::snprintf(text, sizeof(text), "AArch64 CPU (implementer 0x%02llx, part 0x%03llx)",
                (midr >> 24) & 0xff, (midr >> 4) & 0xfff);
  return text;
}

void detect_simd(CpuFeatures &f) {
  // The bit numbers of <asm/hwcap.h>, spelled out so that an older kernel
  // header (without HWCAP2_I8MM) still builds.
  constexpr unsigned long kHwcapAsimd = 1ul << 1, kHwcapAsimdDp = 1ul << 20;
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  f.asimd = (hwcap & kHwcapAsimd) != 0;
  f.asimddp = (hwcap & kHwcapAsimdDp) != 0;
  f.i8mm = (hwcap2 & kHwcap2I8mm) != 0;
}
#else
std::string read_brand() {
  return "CPU";
}
void detect_simd(CpuFeatures &) {}
#endif

CpuFeatures detect() {
  CpuFeatures f;
  detect_simd(f);
  f.brand = read_brand();
  return f;
}

} // namespace

std::string CpuFeatures::describe() const {
  std::string out;
  const auto add = [&out](bool has, const char *name) {
    if (!has)
      return;
    if (!out.empty())
      out += ' ';
    out += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vnni, "avx512vnni");
  add(avxvnni, "avxvnni");
  add(asimd, "asimd");
  add(asimddp, "asimddp");
  add(i8mm, "i8mm");
  return out.empty() ? "no SIMD extensions used by bonsai" : out;
}

const CpuFeatures &cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

} // namespace bonsai::cpu

#include "cpu_features.hpp"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace bonsai::cpu {
namespace {

std::string read_brand() {
#if defined(__x86_64__) || defined(__i386__)
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
#else
  return "CPU";
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
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
#endif
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
  return out.empty() ? "no SIMD extensions used by bonsai" : out;
}

const CpuFeatures &cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

} // namespace bonsai::cpu

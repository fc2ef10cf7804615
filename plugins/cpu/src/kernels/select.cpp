// Picks a context's kernel set from the CPU's features and the user's
// choice (the sets themselves: x86_sets.cpp, arm_sets.cpp).
#include <string>
#include <vector>

#include "kernels/kernel_set.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr const char *kBuildArch = "x86-64";
constexpr const char *kBuildSets = "reference, avx2, avxvnni, avx512";
#elif defined(__aarch64__)
constexpr const char *kBuildArch = "aarch64";
constexpr const char *kBuildSets = "reference, neon, dotprod, i8mm";
#else
constexpr const char *kBuildArch = "this architecture";
constexpr const char *kBuildSets = "reference";
#endif

// A SIMD set by name: the set (nullptr when this build is for another
// architecture), whether this CPU runs it, what it needs, and why auto
// picks it. Listed best first: auto takes the first this CPU runs.
struct Candidate {
  KernelChoice choice;
  const KernelSet *set;
  bool runs;
  const char *arch;  // the architecture the set is for
  const char *needs; // the features, as the refusal names them
  const char *why;   // the debug log's reason when auto picks it
};

std::vector<Candidate> candidates(const CpuFeatures &cpu) {
  return {
      {KernelChoice::Avx512, avx512_kernel_set(), cpu.has_avx512_set(), "x86-64",
       "AVX-512 F/BW/VNNI", "CPU has AVX-512 BW+VNNI"},
      {KernelChoice::AvxVnni, avxvnni_kernel_set(), cpu.has_avxvnni_set(), "x86-64",
       "AVX2/FMA/F16C with AVX-VNNI", "CPU has AVX2 with AVX-VNNI, no AVX-512 VNNI"},
      {KernelChoice::Avx2, avx2_kernel_set(), cpu.has_avx2_set(), "x86-64", "AVX2/FMA/F16C",
       "CPU has AVX2+FMA+F16C, no AVX-512 VNNI"},
      {KernelChoice::I8mm, i8mm_kernel_set(), cpu.has_i8mm_set(), "AArch64",
       "Advanced SIMD with the dot product (SDOT) and int8 matrix multiply (SMMLA) extensions",
       "CPU has Advanced SIMD with SDOT and SMMLA"},
      {KernelChoice::DotProd, dotprod_kernel_set(), cpu.has_dotprod_set(), "AArch64",
       "Advanced SIMD with the dot product extension (SDOT)",
       "CPU has Advanced SIMD with SDOT, no SMMLA"},
      {KernelChoice::Neon, neon_kernel_set(), cpu.has_neon_set(), "AArch64", "Advanced SIMD",
       "CPU has Advanced SIMD, no SDOT"},
  };
}

} // namespace

KernelSelection select_kernel_set(KernelChoice choice, const CpuFeatures &cpu) {
  if (choice == KernelChoice::Reference)
    return {&reference_kernel_set(), "reference kernels requested"};
  for (const Candidate &c : candidates(cpu)) {
    if (choice == KernelChoice::Auto) {
      if (c.set != nullptr && c.runs)
        return {c.set, c.why};
      continue;
    }
    if (c.choice != choice)
      continue;
    const std::string name = kernel_choice_name(choice);
    if (c.set == nullptr)
      fail(BONSAI_ERR_UNSUPPORTED, "kernels=" + name + " is an " + c.arch + " kernel set (" +
                                       c.needs + "), and this CPU plugin is built for " +
                                       kBuildArch + " (its kernel sets: " + kBuildSets + ")");
    if (!c.runs)
      fail(BONSAI_ERR_UNSUPPORTED, "kernels=" + name + " requested but this CPU lacks " + c.needs +
                                       " (has: " + cpu.describe() + ")");
    return {c.set, name + " kernels requested"};
  }
  if (choice != KernelChoice::Auto) // every named set is a candidate
    fail(BONSAI_ERR_INTERNAL, std::string("no kernel set named ") + kernel_choice_name(choice));
  return {&reference_kernel_set(), std::string("CPU has none of the SIMD features of the ") +
                                       kBuildArch + " kernel sets; falling back to the " +
                                       "reference kernels"};
}

} // namespace bonsai::cpu

// Builds the SIMD kernel sets and picks one for a context from CPUID and the
// user's choice.
#include "kernels/kernel_set.hpp"
#include "kernels/simd_kernels.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr bool kHaveX86Kernels = true;

KernelSet make_avx2_set() {
  KernelSet set;
  set.name = "avx2";
  set.exact = false;
  const auto use = [&set](WeightKind kind, RowKernel kernel, bool quantized, QuantLayout layout) {
    set.rows[static_cast<int>(kind)] = kernel;
    set.quantized_input[static_cast<int>(kind)] = quantized;
    set.layout[static_cast<int>(kind)] = layout;
  };
  use(WeightKind::F32, avx2_rows_float, false, QuantLayout::Natural);
  use(WeightKind::F16, avx2_rows_float, false, QuantLayout::Natural);
  use(WeightKind::BF16, avx2_rows_float, false, QuantLayout::Natural);
  use(WeightKind::Q8_0, avx2_rows_q8, true, QuantLayout::Natural);
  use(WeightKind::Q1_0, avx2_rows_q1, true, QuantLayout::Q1Lanes);
  use(WeightKind::Q2_0, avx2_rows_q2, true, QuantLayout::Q2Lanes);
  use(WeightKind::Q2_0_G64, avx2_rows_q2_g64, true, QuantLayout::Q2Lanes);
  set.dot = avx2_dot;
  set.axpy = avx2_axpy;
  set.key_scores = avx2_key_scores;
  set.weighted_values = avx2_weighted_values;
  set.key_scores_multi = avx2_key_scores_multi;
  set.weighted_values_multi = avx2_weighted_values_multi;
  set.softmax_weights = avx2_softmax_weights;
  set.to_f16 = avx2_to_f16;
  set.quantize = avx2_quantize_act_row;
  set.tiled[static_cast<int>(WeightKind::Q1_0)] = {avx2_rows_q1_tables, TileFormat::Q1SignLines,
                                                   QuantLayout::Q1Tables};
  return set;
}

KernelSet make_avx512_set() {
  KernelSet set = make_avx2_set(); // float types and Q8_0 stay on AVX2
  set.name = "avx512";
  set.tiled[static_cast<int>(WeightKind::Q1_0)] = {avx512_rows_q1_tiles, TileFormat::Q1NibbleMasks,
                                                   QuantLayout::Natural};
  // Q1_0 matrices that cannot be tiled: the sign bits are the byte masks.
  set.rows[static_cast<int>(WeightKind::Q1_0)] = avx512_rows_q1;
  set.layout[static_cast<int>(WeightKind::Q1_0)] = QuantLayout::Q1Mask512;
  set.rows[static_cast<int>(WeightKind::Q2_0)] = avx512_rows_q2;
  set.layout[static_cast<int>(WeightKind::Q2_0)] = QuantLayout::Q2Lanes512;
  set.rows[static_cast<int>(WeightKind::Q2_0_G64)] = avx512_rows_q2_g64;
  set.layout[static_cast<int>(WeightKind::Q2_0_G64)] = QuantLayout::Q2Lanes512;
  set.quantize = avx512_quantize_act_row;
  set.key_scores_multi = avx512_key_scores_multi;
  set.weighted_values_multi = avx512_weighted_values_multi;
  set.softmax_weights = avx512_softmax_weights;
  return set;
}
// AVX2 with the Q1_0 and Q2_0 dot products on AVX-VNNI (bit-identical).
KernelSet make_avxvnni_set() {
  KernelSet set = make_avx2_set();
  set.name = "avxvnni";
  set.rows[static_cast<int>(WeightKind::Q1_0)] = avxvnni_rows_q1;
  set.rows[static_cast<int>(WeightKind::Q2_0)] = avxvnni_rows_q2;
  set.rows[static_cast<int>(WeightKind::Q2_0_G64)] = avxvnni_rows_q2_g64;
  return set;
}
#else
constexpr bool kHaveX86Kernels = false;
#endif

} // namespace

const KernelSet *avx2_kernel_set() {
#if defined(__x86_64__) || defined(__i386__)
  static const KernelSet set = make_avx2_set();
  return &set;
#else
  return nullptr;
#endif
}

const KernelSet *avx512_kernel_set() {
#if defined(__x86_64__) || defined(__i386__)
  static const KernelSet set = make_avx512_set();
  return &set;
#else
  return nullptr;
#endif
}

const KernelSet *avxvnni_kernel_set() {
#if defined(__x86_64__) || defined(__i386__)
  static const KernelSet set = make_avxvnni_set();
  return &set;
#else
  return nullptr;
#endif
}

KernelSelection select_kernel_set(KernelChoice choice, const CpuFeatures &cpu) {
  const bool avx2 = kHaveX86Kernels && cpu.has_avx2_set();
  const bool avx512 = kHaveX86Kernels && cpu.has_avx512_set();
  const bool avxvnni = kHaveX86Kernels && cpu.has_avxvnni_set();
  switch (choice) {
  case KernelChoice::Reference:
    return {&reference_kernel_set(), "reference kernels requested"};
  case KernelChoice::Avx2:
    if (!avx2)
      fail(BONSAI_ERR_UNSUPPORTED,
           "kernels=avx2 requested but this CPU lacks AVX2/FMA/F16C (has: " + cpu.describe() + ")");
    return {avx2_kernel_set(), "avx2 kernels requested"};
  case KernelChoice::Avx512:
    if (!avx512)
      fail(BONSAI_ERR_UNSUPPORTED,
           "kernels=avx512 requested but this CPU lacks AVX-512 F/BW/VNNI (has: " + cpu.describe() +
               ")");
    return {avx512_kernel_set(), "avx512 kernels requested"};
  case KernelChoice::AvxVnni:
    if (!avxvnni)
      fail(BONSAI_ERR_UNSUPPORTED,
           "kernels=avxvnni requested but this CPU lacks AVX2/FMA/F16C with AVX-VNNI (has: " +
               cpu.describe() + ")");
    return {avxvnni_kernel_set(), "avxvnni kernels requested"};
  case KernelChoice::Auto:
    break;
  }
  if (avx512)
    return {avx512_kernel_set(), "CPU has AVX-512 BW+VNNI"};
  if (avxvnni)
    return {avxvnni_kernel_set(), "CPU has AVX2 with AVX-VNNI, no AVX-512 VNNI"};
  if (avx2)
    return {avx2_kernel_set(), "CPU has AVX2+FMA+F16C, no AVX-512 VNNI"};
  return {&reference_kernel_set(), "CPU lacks AVX2; falling back to the reference kernels"};
}

} // namespace bonsai::cpu

// The x86-64 kernel sets (AVX2, AVX-512, AVX-VNNI) from their kernels;
// select.cpp picks one.
#include "kernels/kernel_set.hpp"
#include "kernels/simd_kernels.hpp"

namespace bonsai::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
KernelSet make_avx2_set() {
  KernelSet set;
  set.name = "avx2";
  set.exact = false;
  set.use_rows(WeightKind::F32, avx2_rows_float, false, QuantLayout::Natural);
  set.use_rows(WeightKind::F16, avx2_rows_float, false, QuantLayout::Natural);
  set.use_rows(WeightKind::BF16, avx2_rows_float, false, QuantLayout::Natural);
  set.use_rows(WeightKind::Q8_0, avx2_rows_q8, true, QuantLayout::Natural);
  set.use_rows(WeightKind::Q1_0, avx2_rows_q1, true, QuantLayout::Q1Lanes);
  set.use_rows(WeightKind::Q2_0, avx2_rows_q2, true, QuantLayout::Q2Lanes);
  set.use_rows(WeightKind::Q2_0_G64, avx2_rows_q2_g64, true, QuantLayout::Q2Lanes);
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

} // namespace bonsai::cpu

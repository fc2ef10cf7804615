// The AArch64 kernel sets from their kernels; select.cpp picks one.
//   neon    ARMv8.0 Advanced SIMD (every AArch64 CPU): int8 products by
//           SMULL/SMLAL, Q1_0 through TBL lookups in 32-row tiles.
//   dotprod neon with the Q1_0 (rows), Q2_0 and Q8_0 products on SDOT.
//   i8mm    dotprod with the Q1_0 tiles of steps of four or more tokens on
//           SMMLA (pairs of tokens times pairs of rows).
// The three give bit-identical results: their kernels form the same exact
// int32 sums and apply the same float operations to them.
#include "kernels/kernel_set.hpp"

#if defined(__aarch64__)
#include "kernels/arm_kernels.hpp"
#endif

namespace bonsai::cpu {
namespace {

#if defined(__aarch64__)
KernelSet make_neon_set() {
  KernelSet set;
  set.name = "neon";
  set.exact = false;
  set.use_rows(WeightKind::F32, neon_rows_float, false, QuantLayout::Natural);
  set.use_rows(WeightKind::F16, neon_rows_float, false, QuantLayout::Natural);
  set.use_rows(WeightKind::BF16, neon_rows_float, false, QuantLayout::Natural);
  set.use_rows(WeightKind::Q8_0, neon_rows_q8, true, QuantLayout::Natural);
  set.use_rows(WeightKind::Q1_0, neon_rows_q1, true, QuantLayout::Q1Lanes);
  set.use_rows(WeightKind::Q2_0, neon_rows_q2, true, QuantLayout::Q2Lanes);
  set.use_rows(WeightKind::Q2_0_G64, neon_rows_q2_g64, true, QuantLayout::Q2Lanes);
  set.tiled[static_cast<int>(WeightKind::Q1_0)] = {neon_rows_q1_tables, TileFormat::Q1RowLines,
                                                   QuantLayout::Q1Tables};
  set.quantize = neon_quantize_act_row;
  set.dot = neon_dot;
  set.axpy = neon_axpy;
  set.key_scores = neon_key_scores;
  set.weighted_values = neon_weighted_values;
  set.key_scores_multi = neon_key_scores_multi;
  set.weighted_values_multi = neon_weighted_values_multi;
  set.softmax_weights = neon_softmax_weights;
  set.to_f16 = neon_to_f16;
  return set;
}

KernelSet make_dotprod_set() {
  KernelSet set = make_neon_set();
  set.name = "dotprod";
  set.rows[static_cast<int>(WeightKind::Q8_0)] = dotprod_rows_q8;
  set.rows[static_cast<int>(WeightKind::Q1_0)] = dotprod_rows_q1;
  set.rows[static_cast<int>(WeightKind::Q2_0)] = dotprod_rows_q2;
  set.rows[static_cast<int>(WeightKind::Q2_0_G64)] = dotprod_rows_q2_g64;
  return set;
}

KernelSet make_i8mm_set() {
  KernelSet set = make_dotprod_set();
  set.name = "i8mm";
  set.tiled[static_cast<int>(WeightKind::Q1_0)] = {i8mm_rows_q1_tiles, TileFormat::Q1RowLines,
                                                   QuantLayout::Q1TablesAndValues};
  return set;
}
#endif

} // namespace

const KernelSet *neon_kernel_set() {
#if defined(__aarch64__)
  static const KernelSet set = make_neon_set();
  return &set;
#else
  return nullptr;
#endif
}

const KernelSet *dotprod_kernel_set() {
#if defined(__aarch64__)
  static const KernelSet set = make_dotprod_set();
  return &set;
#else
  return nullptr;
#endif
}

const KernelSet *i8mm_kernel_set() {
#if defined(__aarch64__)
  static const KernelSet set = make_i8mm_set();
  return &set;
#else
  return nullptr;
#endif
}

} // namespace bonsai::cpu

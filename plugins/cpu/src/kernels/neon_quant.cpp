// The AArch64 row kernels for Q1_0, Q2_0 and Q8_0 on ARMv8.0 Advanced SIMD:
// int8 products by SMULL/SMLAL, widened by pairwise adds
// (arm_quant_rows.hpp).
#if defined(__aarch64__)

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"

namespace bonsai::cpu {
namespace {

#define BONSAI_ARM_TARGET
#define BONSAI_ARM_SDOT 0
#include "kernels/arm_quant_rows.hpp"
#undef BONSAI_ARM_SDOT
#undef BONSAI_ARM_TARGET

} // namespace

void neon_rows_q1(const RowJob &job) {
  arm_rows<ArmQ1>(job);
}
void neon_rows_q2(const RowJob &job) {
  arm_rows<ArmQ2>(job);
}
void neon_rows_q2_g64(const RowJob &job) {
  arm_rows<ArmQ2G64>(job);
}
void neon_rows_q8(const RowJob &job) {
  arm_rows<ArmQ8>(job);
}

} // namespace bonsai::cpu

#endif

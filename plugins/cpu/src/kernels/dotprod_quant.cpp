// The AArch64 row kernels for Q1_0, Q2_0 and Q8_0 with the ARMv8.2 dot
// product: one SDOT per 16 weights (arm_quant_rows.hpp). The int32 sums
// equal the ARMv8.0 kernels', so the results are bit-identical.
#if defined(__aarch64__)

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"

namespace bonsai::cpu {
namespace {

#define BONSAI_ARM_TARGET BONSAI_TARGET_DOTPROD
#define BONSAI_ARM_SDOT 1
#include "kernels/arm_quant_rows.hpp"
#undef BONSAI_ARM_SDOT
#undef BONSAI_ARM_TARGET

} // namespace

void dotprod_rows_q1(const RowJob &job) {
  arm_rows<ArmQ1>(job);
}
void dotprod_rows_q2(const RowJob &job) {
  arm_rows<ArmQ2>(job);
}
void dotprod_rows_q2_g64(const RowJob &job) {
  arm_rows<ArmQ2G64>(job);
}
void dotprod_rows_q8(const RowJob &job) {
  arm_rows<ArmQ8>(job);
}

} // namespace bonsai::cpu

#endif

#pragma once
// Small helpers shared by the AArch64 kernels. Advanced SIMD is part of the
// ARMv8-A baseline; the dotprod and i8mm kernels carry target attributes
// and may only run once the kernel's HWCAP bits said the features exist.
#if defined(__aarch64__)
#include <arm_neon.h>
#include <cstdint>
#include <cstring>

#define BONSAI_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define BONSAI_TARGET_I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))

namespace bonsai::cpu {

// The f16 scale at the start of a block (blocks are not aligned).
inline float load_f16_scale(const uint8_t *p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(bits))), 0);
}

// Four f16 values (unaligned) as f32.
inline float32x4_t load4_f16(const void *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t *>(p))));
}

// The sum of the four lanes in one fixed order: (v0 + v1) + (v2 + v3).
inline float sum_lanes(float32x4_t v) {
  const float32x4_t pairs = vpaddq_f32(v, v);
  return vgetq_lane_f32(pairs, 0) + vgetq_lane_f32(pairs, 1);
}

// The eight lanes of lo and hi: lane-wise lo + hi, then sum_lanes.
inline float sum_lanes8(float32x4_t lo, float32x4_t hi) {
  return sum_lanes(vaddq_f32(lo, hi));
}

} // namespace bonsai::cpu

#endif

#pragma once
// The CUDA vocabulary the kernel files use, for the CPU emulators
// (kernel_emulator.hpp with threads, fake_driver/fiber_emulator.hpp with
// fibers). Each emulator defines emu::current (the running GPU thread's
// indices and block) and emu::syncthreads / emu::shfl_xor before including
// this header.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace emu {

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IEEE binary16 -> binary32 (normal, subnormal, inf, NaN).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31)
    return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_to_float(sign | static_cast<uint32_t>(exponent + 112) << 23 | (mantissa << 13));
}

} // namespace emu

// ---- the CUDA vocabulary the kernel files use ----
#define BONSAI_KERNEL_EMULATION 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define threadIdx (::emu::current->thread_idx)
#define blockIdx (::emu::current->block_idx)
#define blockDim (::emu::current->block_dim)
#define gridDim (::emu::current->grid_dim)
#define BONSAI_DYNAMIC_SHARED(type, name)                                                          \
  type *name = reinterpret_cast<type *>(::emu::current->block->dynamic_shared.data())

inline void __syncthreads() {
  emu::syncthreads();
}
inline float __shfl_xor_sync(unsigned /*mask*/, float value, int offset) {
  return emu::shfl_xor(value, offset);
}
inline float __uint_as_float(unsigned bits) {
  return emu::bits_to_float(bits);
}
inline float __int_as_float(int bits) {
  return emu::bits_to_float(static_cast<uint32_t>(bits));
}
inline float half_to_float(unsigned short h) {
  return emu::half_bits_to_float(h);
}
using std::min;

#pragma once
// The CUDA vocabulary the kernel files use, for the CPU emulators
// (kernel_emulator.hpp with threads, fake_driver/fiber_emulator.hpp with
// fibers). Each emulator defines emu::current (the running GPU thread's
// indices and block) and emu::syncthreads / emu::shfl_xor before including
// this header.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

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

// IEEE binary32 -> binary16 bits, round to nearest even (cvt.rn.f16.f32):
// overflow to inf, subnormal results, NaN kept quiet.
inline uint16_t float_to_half_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) // rounds to a value >= 65520: overflow
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) { // below the smallest normal half: a subnormal (or 0)
    const float magnitude = bits_to_float(abs);
    return static_cast<uint16_t>(sign |
                                 static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24))));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to even.
  const uint32_t rebased = abs - (112u << 23);
  const uint32_t dropped = rebased & 0x1fffu;
  uint32_t half = rebased >> 13;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, which is right
  return static_cast<uint16_t>(sign | half);
}

// 16-byte weight loads so far (load_weight_u32x4), for tests of how often
// a kernel reads its weights.
inline std::atomic<long> weight_loads{0};

// L2 prefetches (persistent_prefetch): the 128-byte lines asked for since
// the last reset, and the weight chunks copied whose line no prefetch had
// asked for before the copy. Blocks run as fibers of one thread, but the
// lock keeps this right should they ever be threads.
struct PrefetchLog {
  std::mutex lock;
  std::unordered_set<uintptr_t> lines;
  long unprefetched_fetches = 0;
};
inline PrefetchLog &prefetch_log() {
  static PrefetchLog log;
  return log;
}
inline void reset_prefetches() {
  PrefetchLog &log = prefetch_log();
  const std::lock_guard<std::mutex> hold(log.lock);
  log.lines.clear();
  log.unprefetched_fetches = 0;
}
inline void note_prefetch(const void *p) {
  PrefetchLog &log = prefetch_log();
  const std::lock_guard<std::mutex> hold(log.lock);
  log.lines.insert(reinterpret_cast<uintptr_t>(p) / 128);
}
inline void note_weight_fetch(const void *p) {
  PrefetchLog &log = prefetch_log();
  const std::lock_guard<std::mutex> hold(log.lock);
  if (log.lines.count(reinterpret_cast<uintptr_t>(p) / 128) == 0)
    ++log.unprefetched_fetches;
}

// A vector load's address must be aligned as on the GPU, where a
// misaligned one faults.
inline void require_aligned(const void *p, size_t alignment) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    std::fprintf(stderr, "emulated kernel: %zu-byte load from misaligned address %p\n", alignment,
                 p);
    std::abort();
  }
}

// The running thread's cp.async copies in flight (both emulators keep one
// queue per thread in the block).
inline AsyncCopyQueue &async_copies() {
  return current->block->async[current->tid];
}

// The persistent kernel's waits (thread 0's): how many distinct cp.async
// groups with copies in flight it had then, the most seen and at how many
// waits, so that a test sees the weights of later instructions streaming
// (persistent_stream) while a block waits.
struct InFlightLog {
  int most = 0;
  long waits = 0, waits_at_most = 0;
};
inline InFlightLog &in_flight_log() {
  static InFlightLog log;
  return log;
}
inline void note_groups_in_flight() {
  std::vector<int> groups;
  for (const AsyncCopyQueue::Copy &c : async_copies().copies)
    if (std::find(groups.begin(), groups.end(), c.group) == groups.end())
      groups.push_back(c.group);
  InFlightLog &log = in_flight_log();
  const int n = static_cast<int>(groups.size());
  ++log.waits;
  if (n > log.most)
    log.most = n, log.waits_at_most = 0;
  if (n == log.most)
    ++log.waits_at_most;
}

// Lane 0 of the running thread's warp: the emulated tensor-core fragments
// below are whole 16x16 tiles held and computed by lane 0 alone.
inline bool first_lane() {
  return current->tid % 32 == 0;
}

} // namespace emu

// Tensor-core fragments of kernels/matmul_tc.cuh. On the GPU their layout is
// opaque and the kernels only move them between memory and MMAs, so whole
// tiles reproduce the semantics exactly: inputs are f16 values, products are
// summed in f32 (in k order; the hardware's order may differ in rounding).
struct FragAB {
  float v[16][16];
};
struct FragC {
  float v[16][16];
};
inline void frag_zero(FragC &c) {
  std::memset(c.v, 0, sizeof c.v);
}
inline void wmma_load_a_row(FragAB &a, const unsigned short *p, int ldm) {
  if (emu::first_lane())
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < 16; ++k)
        a.v[i][k] = emu::half_bits_to_float(p[i * ldm + k]);
}
inline void wmma_load_b_col(FragAB &b, const unsigned short *p, int ldm) {
  if (emu::first_lane())
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 16; ++n)
        b.v[k][n] = emu::half_bits_to_float(p[n * ldm + k]);
}
inline void wmma_mma(FragC &d, const FragAB &a, const FragAB &b) {
  if (emu::first_lane())
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float sum = d.v[m][n];
        for (int k = 0; k < 16; ++k)
          sum += a.v[m][k] * b.v[k][n];
        d.v[m][n] = sum;
      }
}
inline void wmma_store_col(float *p, const FragC &c, int ldm) {
  if (emu::first_lane())
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n)
        p[n * ldm + m] = c.v[m][n];
}

// One warp-wide mma.sync.m16n8kK from each lane's registers, in the layout
// the PTX ISA gives for A (16 x K, row-major) and B (K x 8) with ELEMS
// elements of K_BITS bits per 32-bit register (lowest k in the lowest bits):
// element (row, k) of A is in lane 4 (row % 8) + (k % (K / 2)) / ELEMS,
// register (row >= 8) + 2 (k >= K / 2); element (k, n) of B in lane
// 4 n + (k % (K / 2)) / ELEMS, register 4 + (k >= K / 2). The lanes publish
// their operands, and each computes its four results (C[g][2c], C[g][2c+1],
// C[g+8][2c], C[g+8][2c+1]) from the whole warp's, summing in Acc in k order.
template <int K, int ELEMS, class Acc, class Element>
void warp_mma(Acc (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
              const Element &element) {
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
  emu::publish_words(mine, 6);
  uint32_t words[32][8];
  emu::gather_words(words);
  const auto a_at = [&](int row, int k) {
    const unsigned lane = static_cast<unsigned>(4 * (row % 8) + (k % (K / 2)) / ELEMS);
    return element(words[lane][(row >= 8 ? 1 : 0) + (k >= K / 2 ? 2 : 0)], k % ELEMS);
  };
  const auto b_at = [&](int k, int n) {
    const unsigned lane = static_cast<unsigned>(4 * n + (k % (K / 2)) / ELEMS);
    return element(words[lane][4 + (k >= K / 2 ? 1 : 0)], k % ELEMS);
  };
  const int lane = static_cast<int>(emu::current->tid % 32), g = lane / 4, c = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * c + i % 2;
    Acc sum = 0;
    for (int k = 0; k < K; ++k)
      sum += a_at(row, k) * b_at(k, col);
    d[i] += sum;
  }
  emu::syncwarp(); // nobody publishes again before every lane has read
}

// mma.sync.m16n8k32 s8 x s8 -> s32 of kernels/matmul_mmq.cuh (layout restated there).
inline void mma_s8_m16n8k32(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  warp_mma<32, 4>(d, a, b0, b1, [](uint32_t word, int i) {
    return static_cast<int>(static_cast<signed char>((word >> (8 * i)) & 255u));
  });
}
// mma.sync.m16n8k16 f16 x f16 -> f32 of kernels/attention_tc.cuh (layout
// restated there): products summed in f32 in k order (the hardware's order
// may differ in rounding).
inline void mma_f16_m16n8k16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  warp_mma<16, 2>(d, a, b0, b1, [](uint32_t word, int i) {
    return emu::half_bits_to_float(static_cast<uint16_t>(word >> (16 * i)));
  });
}
// cp.async: queued per thread, landing at the wait for its group.
inline void cp_async_16(void *shared_dst, const void *global_src) {
  emu::require_aligned(shared_dst, 16);
  emu::require_aligned(global_src, 16);
  emu::AsyncCopyQueue &q = emu::async_copies();
  q.copies.push_back({shared_dst, global_src, q.open_group});
}
inline void cp_async_commit() {
  ++emu::async_copies().open_group;
}
template <int PENDING> inline void cp_async_wait() {
  emu::async_copies().wait(PENDING);
}
inline unsigned short float_to_half(float f) {
  return emu::float_to_half_bits(f);
}

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
inline void __syncwarp(unsigned /*mask*/ = 0xffffffffu) {
  emu::syncwarp();
}
inline float __shfl_xor_sync(unsigned /*mask*/, float value, int offset) {
  return emu::shfl_xor(value, offset);
}
inline float __uint_as_float(unsigned bits) {
  return emu::bits_to_float(bits);
}
inline unsigned __float_as_uint(float value) {
  unsigned bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
// The 32-bit word form, through the same exchange bit for bit.
inline unsigned __shfl_xor_sync(unsigned mask, unsigned value, int offset) {
  return __float_as_uint(__shfl_xor_sync(mask, __uint_as_float(value), offset));
}
inline float __int_as_float(int bits) {
  return emu::bits_to_float(static_cast<uint32_t>(bits));
}
// dp4a.u32.s32: unsigned bytes of a times signed bytes of b, plus c.
inline int dp4a_u8_s8(unsigned a, unsigned b, int c) {
  for (int i = 0; i < 4; ++i)
    c += static_cast<int>((a >> (8 * i)) & 255u) * static_cast<signed char>((b >> (8 * i)) & 255u);
  return c;
}
inline int __float2int_rn(float v) { // round half to even, as cvt.rni
  return static_cast<int>(std::nearbyint(v));
}
inline float half_to_float(unsigned short h) {
  return emu::half_bits_to_float(h);
}
using std::min;

#pragma once
// Runs the plugin's CUDA kernels on the CPU so their arithmetic can be
// checked without a GPU. The .cuh kernel files are included as plain C++
// after this header, which supplies the CUDA built-ins they use: one OS
// thread per GPU thread, blocks one after another (so `__shared__` can be a
// function-local static), __syncthreads as a block barrier and
// __shfl_xor_sync as a warp barrier plus exchange. Slow and only for small
// shapes; it checks results, not performance or memory-model subtleties.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct BlockState {
  std::mutex mutex;
  std::condition_variable changed;
  unsigned n_threads = 0;
  std::vector<int> block_syncs; // barriers passed, per thread
  std::vector<int> warp_syncs;  // warp barriers passed, per thread
  std::vector<bool> done;
  std::vector<float> shuffle; // one exchange slot per thread
  std::vector<unsigned char> dynamic_shared;
};

struct ThreadState {
  Dim3 thread_idx, block_idx, block_dim, grid_dim;
  BlockState *block = nullptr;
  unsigned tid = 0;
};

inline thread_local ThreadState *current = nullptr;

// Waits until every live thread in [first, last) has passed `counter` >= mine.
inline void barrier(std::vector<int> BlockState::*counter, unsigned first, unsigned last) {
  BlockState &b = *current->block;
  std::unique_lock<std::mutex> lock(b.mutex);
  const int mine = ++(b.*counter)[current->tid];
  b.changed.notify_all();
  b.changed.wait(lock, [&] {
    for (unsigned t = first; t < last; ++t)
      if (!b.done[t] && (b.*counter)[t] < mine)
        return false;
    return true;
  });
}

inline void syncthreads() {
  barrier(&BlockState::block_syncs, 0, current->block->n_threads);
}

inline void syncwarp() {
  const unsigned first = current->tid / 32 * 32;
  barrier(&BlockState::warp_syncs, first,
          std::min(first + 32, current->block->n_threads));
}

inline float shfl_xor(float value, int offset) {
  BlockState &b = *current->block;
  {
    std::lock_guard<std::mutex> lock(b.mutex);
    b.shuffle[current->tid] = value;
  }
  syncwarp();
  float partner = 0;
  {
    std::lock_guard<std::mutex> lock(b.mutex);
    partner = b.shuffle[current->tid ^ static_cast<unsigned>(offset)];
  }
  syncwarp(); // nobody overwrites a slot before its reader has it
  return partner;
}

// Runs kernel() for every thread of every block (1-D blocks).
template <class Kernel>
void launch(Dim3 grid, unsigned threads, size_t shared_bytes, const Kernel &kernel) {
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        BlockState block;
        block.n_threads = threads;
        block.block_syncs.assign(threads, 0);
        block.warp_syncs.assign(threads, 0);
        block.done.assign(threads, false);
        block.shuffle.assign(threads, 0.0f);
        block.dynamic_shared.assign(shared_bytes, 0);
        std::vector<std::thread> workers;
        for (unsigned t = 0; t < threads; ++t)
          workers.emplace_back([&, t] {
            ThreadState state;
            state.thread_idx = {t, 0, 0};
            state.block_idx = {x, y, z};
            state.block_dim = {threads, 1, 1};
            state.grid_dim = grid;
            state.block = &block;
            state.tid = t;
            current = &state;
            kernel();
            std::lock_guard<std::mutex> lock(block.mutex);
            block.done[t] = true;
            block.changed.notify_all();
          });
        for (auto &w : workers)
          w.join();
      }
}

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

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

#include "emulator_async_copy.hpp"

namespace emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A reusable barrier over the live threads of a scope (a block or a warp).
// Threads that have returned no longer count, as in CUDA.
struct Barrier {
  int live = 0;
  int arrived = 0;
  long generation = 0;
  std::condition_variable released;

  void release_if_complete() {
    if (arrived > 0 && arrived == live) {
      arrived = 0;
      ++generation;
      released.notify_all();
    }
  }
  void arrive_and_wait(std::unique_lock<std::mutex> &lock) {
    const long mine = generation;
    ++arrived;
    release_if_complete();
    released.wait(lock, [&] { return generation != mine; });
  }
};

struct BlockState {
  BlockState(unsigned threads, size_t shared_bytes)
      : n_threads(threads), warps((threads + 31) / 32), shuffle(threads, 0.0f),
        words(8 * static_cast<size_t>(threads), 0u), async(threads),
        dynamic_shared(shared_bytes, 0) {
    block.live = static_cast<int>(threads);
    for (unsigned w = 0; w < warps.size(); ++w)
      warps[w].live = static_cast<int>(std::min(32u, threads - 32 * w));
  }
  std::mutex mutex;
  unsigned n_threads;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<float> shuffle;        // one exchange slot per thread
  std::vector<uint32_t> words;       // 8 exchange words per thread (tensor-core operands)
  std::vector<AsyncCopyQueue> async; // each thread's cp.async copies in flight
  std::vector<unsigned char> dynamic_shared;
};

struct ThreadState {
  Dim3 thread_idx, block_idx, block_dim, grid_dim;
  BlockState *block = nullptr;
  unsigned tid = 0;
};

inline thread_local ThreadState *current = nullptr;

inline void syncthreads() {
  BlockState &b = *current->block;
  std::unique_lock<std::mutex> lock(b.mutex);
  b.block.arrive_and_wait(lock);
}

inline void syncwarp() {
  BlockState &b = *current->block;
  std::unique_lock<std::mutex> lock(b.mutex);
  b.warps[current->tid / 32].arrive_and_wait(lock);
}

// Called when a thread returns from the kernel.
inline void thread_exit() {
  BlockState &b = *current->block;
  b.async[current->tid].check_empty_at_exit();
  std::lock_guard<std::mutex> lock(b.mutex);
  --b.block.live;
  b.block.release_if_complete();
  Barrier &warp = b.warps[current->tid / 32];
  --warp.live;
  warp.release_if_complete();
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

// Warp-wide operand exchange: every lane publishes n <= 8 words, then
// copies the warp's with gather_words, then passes a syncwarp before
// anyone publishes again.
inline void publish_words(const uint32_t *v, int n) {
  BlockState &b = *current->block;
  {
    std::lock_guard<std::mutex> lock(b.mutex);
    for (int i = 0; i < n; ++i)
      b.words[8 * current->tid + i] = v[i];
  }
  syncwarp();
}
inline void gather_words(uint32_t (&all)[32][8]) {
  BlockState &b = *current->block;
  std::lock_guard<std::mutex> lock(b.mutex);
  std::memcpy(all, b.words.data() + 8 * (current->tid / 32 * 32), sizeof all);
}

// Runs kernel() for every thread of every block (1-D blocks).
template <class Kernel>
void launch(Dim3 grid, unsigned threads, size_t shared_bytes, const Kernel &kernel) {
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        BlockState block(threads, shared_bytes);
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
            thread_exit();
          });
        for (auto &w : workers)
          w.join();
      }
}

} // namespace emu

#include "emulator_builtins.hpp"

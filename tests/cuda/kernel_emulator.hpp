#pragma once
// Runs the plugin's CUDA kernels on the CPU so their arithmetic can be
// checked without a GPU. The .cuh kernel files are included as plain C++
// after this header, which supplies the CUDA built-ins they use: one OS
// thread per GPU thread, blocks one after another (so `__shared__` can be a
// function-local static), __syncthreads as a block barrier and
// __shfl_xor_sync as a warp barrier plus exchange. Slow and only for small
// shapes; it checks results, not performance or memory-model subtleties.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "emulator_async_copy.hpp"

namespace emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A block's shared state. Its barriers (the block's and each warp's) count
// live threads: a thread that returns drops out of them, as in CUDA. Each
// thread writes only its own exchange slots, and reads others' after a
// barrier, which orders the writes before the reads.
struct BlockState {
  BlockState(unsigned threads, size_t shared_bytes)
      : n_threads(threads), block(static_cast<std::ptrdiff_t>(threads)), shuffle(threads, 0.0f),
        words(8 * static_cast<size_t>(threads), 0u), async(threads),
        dynamic_shared(shared_bytes, 0) {
    for (unsigned first = 0; first < threads; first += 32)
      warps.push_back(std::make_unique<std::barrier<>>(std::min(32u, threads - first)));
  }
  unsigned n_threads;
  std::barrier<> block;
  std::vector<std::unique_ptr<std::barrier<>>> warps; // std::barrier cannot move
  std::vector<float> shuffle;                         // one exchange slot per thread
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
  current->block->block.arrive_and_wait();
}

inline void syncwarp() {
  current->block->warps[current->tid / 32]->arrive_and_wait();
}

// Called when a thread returns from the kernel.
inline void thread_exit() {
  BlockState &b = *current->block;
  b.async[current->tid].check_empty_at_exit();
  b.block.arrive_and_drop();
  b.warps[current->tid / 32]->arrive_and_drop();
}

inline float shfl_xor(float value, int offset) {
  BlockState &b = *current->block;
  b.shuffle[current->tid] = value;
  syncwarp();
  const float partner = b.shuffle[current->tid ^ static_cast<unsigned>(offset)];
  syncwarp(); // nobody overwrites a slot before its reader has it
  return partner;
}

// Warp-wide operand exchange: every lane publishes n <= 8 words, then
// copies the warp's with gather_words, then passes a syncwarp before
// anyone publishes again.
inline void publish_words(const uint32_t *v, int n) {
  BlockState &b = *current->block;
  for (int i = 0; i < n; ++i)
    b.words[8 * current->tid + i] = v[i];
  syncwarp();
}
inline void gather_words(uint32_t (&all)[32][8]) {
  const BlockState &b = *current->block;
  std::memcpy(all, b.words.data() + 8 * (current->tid / 32 * 32), sizeof all);
}

// Runs kernel() for every thread of every block (1-D blocks). One OS thread
// per GPU thread of a block, started once per launch and reused for block
// after block: starting them anew for each block spent most of a test's time
// in system calls (several times the arithmetic under ASan).
template <class Kernel>
void launch(Dim3 grid, unsigned threads, size_t shared_bytes, const Kernel &kernel) {
  std::vector<Dim3> blocks;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x)
        blocks.push_back({x, y, z});
  auto block = std::make_unique<BlockState>(threads, shared_bytes);
  // Runs once, after every thread has finished a block and before any starts
  // the next: a fresh BlockState (barrier counts, exchange slots, shared
  // memory zeroed) as a newly scheduled block would find.
  auto next_block = [&]() noexcept { block = std::make_unique<BlockState>(threads, shared_bytes); };
  std::barrier between_blocks(static_cast<std::ptrdiff_t>(threads), next_block);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      ThreadState state;
      state.thread_idx = {t, 0, 0};
      state.block_dim = {threads, 1, 1};
      state.grid_dim = grid;
      state.tid = t;
      current = &state;
      for (const Dim3 &block_idx : blocks) {
        state.block_idx = block_idx;
        state.block = block.get();
        kernel();
        thread_exit();
        between_blocks.arrive_and_wait();
      }
    });
  for (auto &w : workers)
    w.join();
}

} // namespace emu

#include "emulator_builtins.hpp"

#pragma once
// A faster CPU emulator for whole models: every GPU thread of a block is a
// fiber on the calling OS thread; a barrier switches back to the scheduler,
// which resumes the fibers whose barrier has been released. Blocks run one
// after another. Same vocabulary as kernel_emulator.hpp
// (emulator_builtins.hpp).
//
// A fiber is created once (makecontext, its first entry by swapcontext) and
// then runs one block after another in a loop; every later switch is
// _setjmp/_longjmp, which unlike swapcontext makes no system call (the
// signal mask is never saved). That made whole-model runs several times
// faster. Jumping between stacks is what _longjmp's fortified variant
// refuses, so the including file must be built without _FORTIFY_SOURCE.
#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0
#error "fiber_emulator.hpp switches stacks with _longjmp: build without _FORTIFY_SOURCE"
#endif
#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "emulator_async_copy.hpp"

namespace emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A barrier over the live fibers of a scope (block or warp).
struct Barrier {
  int live = 0;
  int arrived = 0;
  long generation = 0;
  void release_if_complete() {
    if (arrived > 0 && arrived == live) {
      arrived = 0;
      ++generation;
    }
  }
};

struct BlockState {
  unsigned n_threads = 0;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<float> shuffle;
  std::vector<uint32_t> words;       // 8 exchange words per thread (tensor-core operands)
  std::vector<AsyncCopyQueue> async; // each thread's cp.async copies in flight
  std::vector<unsigned char> dynamic_shared;
};

inline constexpr size_t kFiberStackBytes = 64 * 1024;

struct ThreadState {
  Dim3 thread_idx, block_idx, block_dim, grid_dim;
  BlockState *block = nullptr;
  unsigned tid = 0;
  // Scheduling.
  ucontext_t context{};          // only for the fiber's first entry
  jmp_buf jump{};                // where the fiber resumes
  bool created = false;          // entered once: resumes through jump since
  std::unique_ptr<char[]> stack; // uninitialised: cheap to reuse
  bool done = false;
  const Barrier *waiting_on = nullptr;
  long waiting_generation = 0;
};

inline ThreadState *current = nullptr;
inline ucontext_t scheduler_context;
inline jmp_buf scheduler_jump;
inline const std::function<void()> *running_kernel = nullptr;

inline void fiber_main();

// The only places that switch contexts; kept out of line so no caller's
// locals live across a _setjmp call.
[[gnu::noinline]] inline void suspend_current() {
  if (_setjmp(current->jump) == 0)
    _longjmp(scheduler_jump, 1);
}
[[gnu::noinline]] inline void resume(ThreadState &fiber) {
  current = &fiber;
  if (_setjmp(scheduler_jump) != 0)
    return; // the fiber suspended or finished its block
  if (!fiber.created) {
    fiber.created = true;
    getcontext(&fiber.context);
    fiber.context.uc_stack.ss_sp = fiber.stack.get();
    fiber.context.uc_stack.ss_size = kFiberStackBytes;
    fiber.context.uc_link = nullptr; // fiber_main never returns
    makecontext(&fiber.context, fiber_main, 0);
    swapcontext(&scheduler_context, &fiber.context);
  }
  _longjmp(fiber.jump, 1);
}

inline void wait_at(Barrier &barrier) {
  const long mine = barrier.generation;
  ++barrier.arrived;
  barrier.release_if_complete();
  if (barrier.generation != mine)
    return; // this fiber completed the barrier
  current->waiting_on = &barrier;
  current->waiting_generation = mine;
  suspend_current();
}

inline void syncthreads() {
  wait_at(current->block->block);
}
inline void syncwarp() {
  wait_at(current->block->warps[current->tid / 32]);
}
inline float shfl_xor(float value, int offset) {
  BlockState &b = *current->block;
  b.shuffle[current->tid] = value;
  syncwarp();
  const float partner = b.shuffle[current->tid ^ static_cast<unsigned>(offset)];
  syncwarp();
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
  std::memcpy(all, current->block->words.data() + 8 * (current->tid / 32 * 32), sizeof all);
}

// A fiber's whole life: one block after another, suspending after each
// until the scheduler resumes it for the next.
inline void fiber_main() {
  for (;;) {
    (*running_kernel)();
    current->done = true;
    BlockState &b = *current->block;
    b.async[current->tid].check_empty_at_exit();
    --b.block.live;
    b.block.release_if_complete();
    Barrier &warp = b.warps[current->tid / 32];
    --warp.live;
    warp.release_if_complete();
    suspend_current();
  }
}

template <class Kernel>
void launch(Dim3 grid, unsigned threads, size_t shared_bytes, const Kernel &kernel) {
  const std::function<void()> body = kernel;
  running_kernel = &body;
  // Fibers (and their stacks) are kept between launches.
  static std::vector<ThreadState> pool;
  while (pool.size() < threads) {
    pool.emplace_back();
    pool.back().stack.reset(new char[kFiberStackBytes]);
  }
  const auto fibers = std::span<ThreadState>(pool.data(), threads);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        BlockState block;
        block.n_threads = threads;
        block.block.live = static_cast<int>(threads);
        block.warps.resize((threads + 31) / 32);
        for (unsigned w = 0; w < block.warps.size(); ++w)
          block.warps[w].live = static_cast<int>(std::min(32u, threads - 32 * w));
        block.shuffle.assign(threads, 0.0f);
        block.words.assign(8 * static_cast<size_t>(threads), 0u);
        block.async.assign(threads, AsyncCopyQueue{});
        block.dynamic_shared.assign(shared_bytes, 0);
        for (unsigned t = 0; t < threads; ++t) {
          ThreadState &f = fibers[t];
          f.thread_idx = {t, 0, 0};
          f.block_idx = {x, y, z};
          f.block_dim = {threads, 1, 1};
          f.grid_dim = grid;
          f.block = &block;
          f.tid = t;
          f.done = false;
          f.waiting_on = nullptr;
        }
        for (;;) {
          bool all_done = true;
          bool progressed = false;
          for (ThreadState &f : fibers) {
            if (f.done)
              continue;
            all_done = false;
            if (f.waiting_on != nullptr && f.waiting_on->generation == f.waiting_generation)
              continue;
            f.waiting_on = nullptr;
            resume(f);
            progressed = true;
          }
          if (all_done)
            break;
          if (!progressed) {
            std::fprintf(stderr,
                         "fiber emulator: deadlock in a kernel (barrier never completes)\n");
            std::abort();
          }
        }
      }
  current = nullptr;
  running_kernel = nullptr;
}

} // namespace emu

#include "emulator_builtins.hpp"

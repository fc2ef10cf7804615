#pragma once
// A faster CPU emulator for whole models: every GPU thread of a block is a
// fiber on the calling OS thread; a barrier switches back to the scheduler,
// which resumes the fibers whose barrier has been released. Blocks run one
// after another, except in launch_cooperative (the persistent decode
// kernel), where all blocks live at once, are visited in a random order on
// every pass, and wait for each other through counters in global memory:
// a block's pk_stores stay invisible to the others until it fences, and
// time (globaltimer) only passes when every live block is waiting. Same
// vocabulary as kernel_emulator.hpp (emulator_builtins.hpp).
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
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
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

// A store of a persistent kernel not yet visible to other blocks.
struct PendingStore {
  void *address;
  uint32_t bits;
  unsigned bytes;
};

struct BlockState {
  unsigned n_threads = 0;
  std::vector<PendingStore> pending; // launch_cooperative: stores before the next fence
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
  // A counter wait (launch_cooperative): resumable once *wait_counter >=
  // wait_target, *wait_abort != 0 or the clock reaches wait_until.
  const int *wait_counter = nullptr;
  int wait_target = 0;
  const int *wait_abort = nullptr;
  long long wait_until = 0;
};

inline ThreadState *current = nullptr;
inline ucontext_t scheduler_context;
inline jmp_buf scheduler_jump;
inline const std::function<void()> *running_kernel = nullptr;

// launch_cooperative's world: the virtual globaltimer, and the faults a
// test may inject (fences that publish nothing, one lost counter update).
inline bool cooperative_running = false;
inline long long virtual_ns = 0;
inline bool ignore_fences = false;
inline long lose_signal_at = 0; // 1-based: the launch's n-th counter update is dropped
inline long signals_seen = 0;
inline unsigned long schedule_seed = 1; // advanced by every cooperative launch

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

// At least n fibers; they (and their stacks) are kept between launches.
inline std::span<ThreadState> fiber_pool(size_t n) {
  static std::vector<ThreadState> pool;
  while (pool.size() < n) {
    pool.emplace_back();
    pool.back().stack.reset(new char[kFiberStackBytes]);
  }
  return std::span<ThreadState>(pool.data(), n);
}

// A fresh block of `threads` threads with `shared_bytes` of dynamic shared memory.
inline void init_block(BlockState &block, unsigned threads, size_t shared_bytes) {
  block.n_threads = threads;
  block.block.live = static_cast<int>(threads);
  block.warps.resize((threads + 31) / 32);
  for (unsigned w = 0; w < block.warps.size(); ++w)
    block.warps[w].live = static_cast<int>(std::min(32u, threads - 32 * w));
  block.shuffle.assign(threads, 0.0f);
  block.words.assign(8 * static_cast<size_t>(threads), 0u);
  block.async.assign(threads, AsyncCopyQueue{});
  block.dynamic_shared.assign(shared_bytes, 0);
}

inline void init_fiber(ThreadState &f, BlockState &block, Dim3 block_idx, Dim3 grid, unsigned t,
                       unsigned threads) {
  f.thread_idx = {t, 0, 0};
  f.block_idx = block_idx;
  f.block_dim = {threads, 1, 1};
  f.grid_dim = grid;
  f.block = &block;
  f.tid = t;
  f.done = false;
  f.waiting_on = nullptr;
  f.wait_counter = nullptr;
}

// Whether a suspended fiber may run again.
inline bool resumable(const ThreadState &f) {
  if (f.waiting_on != nullptr && f.waiting_on->generation == f.waiting_generation)
    return false;
  if (f.wait_counter != nullptr && *f.wait_counter < f.wait_target && *f.wait_abort == 0 &&
      virtual_ns < f.wait_until)
    return false;
  return true;
}

template <class Kernel>
void launch(Dim3 grid, unsigned threads, size_t shared_bytes, const Kernel &kernel) {
  const std::function<void()> body = kernel;
  running_kernel = &body;
  const auto fibers = fiber_pool(threads);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        BlockState block;
        init_block(block, threads, shared_bytes);
        for (unsigned t = 0; t < threads; ++t)
          init_fiber(fibers[t], block, {x, y, z}, grid, t, threads);
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

// ---- the persistent kernel's memory model (kernels/persistent.cuh) ----

inline long long virtual_clock_ns() {
  return virtual_ns;
}

// The persistent kernel's trace clock: one tick per read, across all
// blocks, so that a trace records the order its events happened in.
inline unsigned long long trace_ticks = 0;
inline unsigned long long trace_tick() {
  return ++trace_ticks;
}

// Suspends the calling thread until the counter may have reached its
// target, the abort flag is raised, or the clock reaches `until`.
inline void wait_for_counter(const int *counter, int target, const int *abort, long long until) {
  current->wait_counter = counter;
  current->wait_target = target;
  current->wait_abort = abort;
  current->wait_until = until;
  suspend_current();
}

template <class V> void buffered_store(V *address, V value) {
  if (!cooperative_running) {
    *address = value;
    return;
  }
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  current->block->pending.push_back({address, bits, static_cast<unsigned>(sizeof value)});
}

inline void publish(BlockState &block) {
  for (const PendingStore &store : block.pending)
    std::memcpy(store.address, &store.bits, store.bytes);
  block.pending.clear();
}

// A fence by any thread publishes its block's stores (the fence after a
// block barrier is cumulative on the GPU).
inline void release_fence() {
  if (!ignore_fences)
    publish(*current->block);
}

inline void add_signal(int *counter) {
  if (++signals_seen == lose_signal_at)
    return; // the injected lost update
  ++*counter;
}

// Runs every block of the grid at once: each pass visits the blocks in a
// new random order, leaves each one out with probability 1/2 (a block that
// falls behind, as a slow SM would, so that a consumer released too early
// runs before its last producer), and resumes each runnable thread of the
// others until it suspends again. When no thread can run and some wait on
// counters, the clock jumps to the earliest of their deadlines; when none
// does, the kernel hangs for good: abort.
template <class Kernel>
void launch_cooperative(Dim3 grid, unsigned threads, size_t shared_bytes, const Kernel &kernel) {
  const std::function<void()> body = kernel;
  running_kernel = &body;
  const unsigned n_blocks = grid.x * grid.y * grid.z;
  const auto fibers = fiber_pool(static_cast<size_t>(n_blocks) * threads);
  std::vector<BlockState> blocks(n_blocks);
  for (unsigned b = 0; b < n_blocks; ++b) {
    init_block(blocks[b], threads, shared_bytes);
    const Dim3 index{b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
    for (unsigned t = 0; t < threads; ++t)
      init_fiber(fibers[b * threads + t], blocks[b], index, grid, t, threads);
  }
  cooperative_running = true;
  signals_seen = 0;
  std::mt19937 random(static_cast<unsigned>(schedule_seed++));
  std::vector<unsigned> order(n_blocks);
  std::iota(order.begin(), order.end(), 0u);
  bool skip = true; // after a pass that ran nothing, one that leaves nobody out
  for (;;) {
    std::shuffle(order.begin(), order.end(), random);
    bool all_done = true, progressed = false, skipped = false;
    for (const unsigned b : order) {
      if (skip && random() % 2 == 0) {
        skipped =
            skipped || std::any_of(fibers.begin() + b * threads, fibers.begin() + (b + 1) * threads,
                                   [](const ThreadState &f) { return !f.done; });
        continue;
      }
      for (unsigned t = 0; t < threads; ++t) {
        ThreadState &f = fibers[b * threads + t];
        if (f.done)
          continue;
        all_done = false;
        if (!resumable(f))
          continue;
        f.waiting_on = nullptr;
        f.wait_counter = nullptr;
        resume(f);
        progressed = true;
      }
    }
    if (all_done && !skipped)
      break;
    skip = progressed;
    if (progressed || skipped)
      continue;
    long long earliest = LLONG_MAX;
    for (const ThreadState &f : fibers)
      if (!f.done && f.wait_counter != nullptr)
        earliest = std::min(earliest, f.wait_until);
    if (earliest == LLONG_MAX) {
      std::fprintf(stderr, "fiber emulator: deadlock in a cooperative kernel\n");
      std::abort();
    }
    virtual_ns = earliest;
  }
  for (BlockState &block : blocks)
    publish(block); // the kernel's end makes every store visible
  cooperative_running = false;
  current = nullptr;
  running_kernel = nullptr;
}

} // namespace emu

#include "emulator_builtins.hpp"

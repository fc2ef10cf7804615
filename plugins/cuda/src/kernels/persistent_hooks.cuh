// The persistent kernel's handful of memory and clock operations, twice: as
// PTX on the GPU, and as hooks into the fiber emulator
// (tests/cuda/fake_driver/fiber_emulator.hpp) where the kernel runs on the
// CPU (BONSAI_KERNEL_EMULATION). The emulator holds a block's pk_stores back
// until that block fences and switches blocks only at waits, so everything
// the handoff protocol (persistent_handoff.cuh) relies on goes through here.
#ifndef BONSAI_KERNEL_EMULATION
__device__ __forceinline__ int pk_load_acquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ int pk_load_relaxed(const int *p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ long long pk_clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return (long long)t;
}
__device__ __forceinline__ unsigned long long pk_trace_ns() {
  return (unsigned long long)pk_clock_ns();
}
// Between two polls of a counter: let the other warps of the SM run.
__device__ __forceinline__ void pk_pause(const int *, int, const int *, long long) {
  asm volatile("nanosleep.u32 64;");
}
__device__ __forceinline__ void pk_fence() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
__device__ __forceinline__ void pk_signal(int *p) {
  asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;" ::"l"(p) : "memory");
}
// True for the one caller that turns *p from 0 to 1.
__device__ __forceinline__ bool pk_claim(int *p) {
  int old;
  asm volatile("atom.relaxed.gpu.global.cas.b32 %0, [%1], 0, 1;" : "=r"(old) : "l"(p) : "memory");
  return old == 0;
}
__device__ __forceinline__ void pk_store(float *p, float v) {
  *p = v;
}
__device__ __forceinline__ void pk_store(u16 *p, u16 v) {
  *p = v;
}
__device__ __forceinline__ void pk_store(u32 *p, u32 v) {
  *p = v;
}
// Adds n and returns the old value, acquiring what the earlier adders
// released (they fenced before adding).
__device__ __forceinline__ int pk_arrive(int *p, int n = 1) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(n)
               : "memory");
  return old;
}
// One 16-byte chunk of weight codes into the weight buffer.
__device__ __forceinline__ void pk_fetch_codes_16(unsigned char *dst, const u8 *src) {
  cp_async_16(dst, src);
}
// Asks L2 for the 128-byte line that holds `p` (no register waits for it).
__device__ __forceinline__ void pk_prefetch_l2(const u8 *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
// The emulator's count of the cp.async groups in flight at a wait.
__device__ __forceinline__ void pk_note_in_flight() {}
#else
inline int pk_load_acquire(const int *p) {
  return *p;
}
inline int pk_load_relaxed(const int *p) {
  return *p;
}
inline long long pk_clock_ns() {
  return emu::virtual_clock_ns();
}
inline unsigned long long pk_trace_ns() { // a tick per read: the order events happened in
  return emu::trace_tick();
}
inline void pk_pause(const int *counter, int target, const int *abort, long long until) {
  emu::wait_for_counter(counter, target, abort, until);
}
inline void pk_fence() {
  emu::release_fence();
}
inline void pk_signal(int *p) {
  emu::add_signal(p);
}
inline bool pk_claim(int *p) {
  if (*p != 0)
    return false;
  *p = 1;
  return true;
}
inline void pk_store(float *p, float v) {
  emu::buffered_store(p, v);
}
inline void pk_store(u16 *p, u16 v) {
  emu::buffered_store(p, v);
}
inline void pk_store(u32 *p, u32 v) {
  emu::buffered_store(p, v);
}
inline int pk_arrive(int *p,
                     int n = 1) { // fibers switch only at waits: no other block runs between
  const int old = *p;
  *p += n;
  return old;
}
inline void pk_fetch_codes_16(unsigned char *dst, const u8 *src) {
  ++emu::weight_loads;         // the tests count how often each chunk is read
  emu::note_weight_fetch(src); // and whether a prefetch asked for it first
  cp_async_16(dst, src);
}
inline void pk_prefetch_l2(const u8 *p) {
  emu::note_prefetch(p);
}
inline void pk_note_in_flight() { // how far ahead the weights stream (persistent_stream)
  emu::note_groups_in_flight();
}
#endif

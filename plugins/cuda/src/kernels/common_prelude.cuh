// Helpers shared by every program: weight decoding per ggml type and warp
// reductions. NVRTC has no standard headers here, so nothing is included.
// The same text is compiled as plain C++ by the kernel emulator test
// (tests/cuda/kernel_emulator.hpp), which defines BONSAI_KERNEL_EMULATION and
// supplies the CUDA built-ins; the #ifndef / #else hooks below are for it.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

// Weight rows are byte streams with no alignment promise (an 18-byte Q1_0
// block leaves later blocks on odd addresses), so multi-byte fields are
// assembled from bytes.
__device__ __forceinline__ u16 load_u16(const u8 *p) {
  return (u16)(p[0] | ((u16)p[1] << 8));
}
__device__ __forceinline__ u32 load_u32(const u8 *p) {
  return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24);
}
#ifndef BONSAI_KERNEL_EMULATION
__device__ __forceinline__ float half_to_float(u16 h) {
  float f;
  asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
  return f;
}
// Round to nearest even, as the tensor cores' inputs and the f16 KV cache need.
__device__ __forceinline__ u16 float_to_half(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
// 16 bytes, for vector loads of the planar weights and of shared memory.
struct alignas(16) U32x4 {
  u32 x, y, z, w;
};
#ifndef BONSAI_KERNEL_EMULATION
// 16 aligned bytes of a weight through the read-only cache.
__device__ __forceinline__ U32x4 load_weight_u32x4(const u8 *p) {
  U32x4 v;
  asm("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
// 16 aligned bytes of shared memory in one vector load (the compiler may
// otherwise split a struct copy into four). Volatile with a memory clobber:
// it must stay after the __syncthreads that publishes the data.
__device__ __forceinline__ U32x4 load_shared_u32x4(const U32x4 *p) {
  U32x4 v;
  asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %4; ld.shared.v4.u32 {%0,%1,%2,%3}, [a]; }"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
// 16 bytes global -> shared without passing through registers; lands by
// the matching cp_async_wait. Before compute capability 8.0 (no cp.async)
// a plain copy through registers, landed at once.
__device__ __forceinline__ void cp_async_16(void *shared_dst, const void *global_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("{ .reg .u64 s, g; cvta.to.shared.u64 s, %0; cvta.to.global.u64 g, %1;"
               " cp.async.cg.shared.global [s], [g], 16; }" ::"l"(shared_dst),
               "l"(global_src)
               : "memory");
#else
  *(U32x4 *)shared_dst = load_weight_u32x4((const u8 *)global_src);
#endif
}
// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Waits until at most PENDING of this thread's committed groups are in flight.
template <int PENDING> __device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
#endif
}
// c + the sum of the four products of a's unsigned bytes with b's signed bytes.
__device__ __forceinline__ int dp4a_u8_s8(u32 a, u32 b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
#else
inline U32x4 load_weight_u32x4(const u8 *p) {
  emu::require_aligned(p, 16);
  ++emu::weight_loads;
  return *reinterpret_cast<const U32x4 *>(p);
}
inline U32x4 load_shared_u32x4(const U32x4 *p) {
  emu::require_aligned(p, 16);
  return *p;
}
#endif
// Programmatic dependent launch (option pdl, sm_90+): a kernel launched
// with it may start while the kernel before it in the stream still runs.
// Every kernel calls grid_entry() before it reads or writes memory another
// kernel of the stream touches (only constant weights may be read before):
// it waits until the previous grid has finished and its writes are visible,
// then lets the next grid be scheduled, so that grid's blocks can start
// fetching their weights while this one works. Because each kernel waits for
// the one before it to finish, a kernel never overlaps one two places back.
// Without the launch attribute (or below sm_90) both are no-ops.
#ifndef BONSAI_KERNEL_EMULATION
__device__ __forceinline__ void grid_entry() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#else
inline void grid_entry() {} // the emulator runs grids one after another
#endif
// Before a loop with a large body over a register array: unrolled, so that
// the array keeps constant indices (and registers) instead of going to local
// memory, which the compiler does for a loop it leaves rolled.
#ifndef BONSAI_KERNEL_EMULATION
#define BONSAI_UNROLL _Pragma("unroll")
#else
#define BONSAI_UNROLL
#endif
// Dynamic shared memory of a kernel, sized by the launch.
#ifndef BONSAI_DYNAMIC_SHARED
#define BONSAI_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

// One struct per ggml type: QK weights per block, and how a kernel reads
// them. block(w, rows, n_blocks, row, b) locates block b of row `row` in the
// uploaded weight `w` (rows x n_blocks blocks) and value(block, j) is its
// weight j (0 <= j < QK). The byte-stream types keep the GGUF layout, rows
// of BYTES-byte blocks.
template <int QK_, int BYTES_> struct ByteStreamType {
  static const int QK = QK_, BYTES = BYTES_;
  typedef const u8 *Block;
  static __device__ __forceinline__ Block block(const u8 *w, int, int n_blocks, int row, int b) {
    return w + ((size_t)row * n_blocks + b) * BYTES;
  }
};
struct TypeF32 : ByteStreamType<1, 4> {
  static __device__ __forceinline__ float value(Block b, int) {
    return __uint_as_float(load_u32(b));
  }
};
struct TypeF16 : ByteStreamType<1, 2> {
  static __device__ __forceinline__ float value(Block b, int) { return half_to_float(load_u16(b)); }
};
struct TypeBF16 : ByteStreamType<1, 2> {
  static __device__ __forceinline__ float value(Block b, int) {
    return __uint_as_float((u32)load_u16(b) << 16);
  }
};
struct TypeQ8_0 : ByteStreamType<32, 34> { // f16 d, then 32 int8
  static __device__ __forceinline__ float value(Block b, int j) {
    return half_to_float(load_u16(b)) * (float)(signed char)b[2 + j];
  }
};

// Q1_0 and Q2_0 are repacked at upload (weight_repack.cpp) into two planes:
// all blocks' PAYLOAD code bytes (rows x n_blocks x PAYLOAD, so every block
// is 16-byte aligned for vector loads), then all f16 scales (rows x
// n_blocks). Inside a block the codes are regrouped per 32-bit word so that
// one shift and mask yields four consecutive weights, one per byte, ready
// for dp4a (kernels/gemv_dp4a.cuh): word k, plane i, byte b holds weight
// k * W + 4 * i + b, W being the weights per word.
template <int PAYLOAD_, int BITS_> struct PlanarType {
  static const int QK = 128, PAYLOAD = PAYLOAD_, BITS = BITS_;
  static const int PER_WORD = 32 / BITS; // weights per 32-bit word
  struct Block {
    const u8 *codes;
    float d;
  };
  static __device__ __forceinline__ Block block(const u8 *w, int rows, int n_blocks, int row,
                                                int b) {
    const size_t index = (size_t)row * n_blocks + b;
    const u8 *scales = w + (size_t)rows * n_blocks * PAYLOAD;
    Block block = {w + index * PAYLOAD, half_to_float(load_u16(scales + 2 * index))};
    return block;
  }
  // The BITS-bit code of weight j.
  static __device__ __forceinline__ int code(const Block &b, int j) {
    const int k = j / PER_WORD, r = j % PER_WORD;
    const int shift = 8 * (r % 4) + BITS * (r / 4);
    return (int)(load_u32(b.codes + 4 * k) >> shift) & ((1 << BITS) - 1);
  }
};
struct TypeQ1_0 : PlanarType<16, 1> { // sign bits: set -> +d, clear -> -d
  static __device__ __forceinline__ float value(const Block &b, int j) {
    return code(b, j) ? b.d : -b.d;
  }
};
struct TypeQ2_0 : PlanarType<32, 2> { // 2-bit codes: (code - 1) * d
  static __device__ __forceinline__ float value(const Block &b, int j) {
    return (float)(code(b, j) - 1) * b.d;
  }
};

#define BONSAI_NEG_INF (-__int_as_float(0x7f800000))

// The KV cache's element: f32, or f16 (its bits as u16) for half the bytes
// read per key. The kernels that touch the cache are templates over it, each
// exported twice (BONSAI_KV_KERNELS in layer.cuh, and persistent.cuh): NAME
// for f32, NAME_f16.
__device__ __forceinline__ float kv_load(const float *p, size_t i) {
  return p[i];
}
__device__ __forceinline__ float kv_load(const u16 *p, size_t i) {
  return half_to_float(p[i]);
}
__device__ __forceinline__ void kv_store(float *p, size_t i, float value) {
  p[i] = value;
}
__device__ __forceinline__ void kv_store(u16 *p, size_t i, float value) {
  p[i] = float_to_half(value);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `scratch` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads(); // scratch may still be read by a previous call
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  const int n_warps = blockDim.x / 32;
  float total = 0.0f;
  for (int w = 0; w < n_warps; ++w)
    total += scratch[w];
  return total;
}

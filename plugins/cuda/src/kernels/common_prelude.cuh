// Helpers shared by every program: weight decoding per ggml type and warp
// reductions. NVRTC has no standard headers here, so nothing is included.
// The same text is compiled as plain C++ by the kernel emulator test
// (tests/cuda/kernel_emulator.hpp), which defines BONSAI_KERNEL_EMULATION and
// supplies the CUDA built-ins; the two #ifndef hooks below are for it.
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
#endif
// Dynamic shared memory of a kernel, sized by the launch.
#ifndef BONSAI_DYNAMIC_SHARED
#define BONSAI_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

// One struct per ggml type: QK weights per block of BYTES bytes, and the
// value of weight j (0 <= j < QK) of a block.
struct TypeF32 {
  static const int QK = 1, BYTES = 4;
  static __device__ __forceinline__ float value(const u8 *b, int) { return __uint_as_float(load_u32(b)); }
};
struct TypeF16 {
  static const int QK = 1, BYTES = 2;
  static __device__ __forceinline__ float value(const u8 *b, int) { return half_to_float(load_u16(b)); }
};
struct TypeBF16 {
  static const int QK = 1, BYTES = 2;
  static __device__ __forceinline__ float value(const u8 *b, int) {
    return __uint_as_float((u32)load_u16(b) << 16);
  }
};
struct TypeQ8_0 { // f16 d, then 32 int8
  static const int QK = 32, BYTES = 34;
  static __device__ __forceinline__ float value(const u8 *b, int j) {
    return half_to_float(load_u16(b)) * (float)(signed char)b[2 + j];
  }
};
struct TypeQ1_0 { // f16 d, then 128 sign bits LSB-first: set -> +d, clear -> -d
  static const int QK = 128, BYTES = 18;
  static __device__ __forceinline__ float value(const u8 *b, int j) {
    const float d = half_to_float(load_u16(b));
    return ((b[2 + j / 8] >> (j % 8)) & 1) ? d : -d;
  }
};
struct TypeQ2_0 { // f16 d, then 128 2-bit codes LSB-first: (code - 1) * d
  static const int QK = 128, BYTES = 34;
  static __device__ __forceinline__ float value(const u8 *b, int j) {
    const int code = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
    return (float)(code - 1) * half_to_float(load_u16(b));
  }
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `scratch` holds 32 floats.
__device__ float block_sum(float v, float *scratch) {
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

// The int8 MMA of compute capability 8.0 and newer, and its A operands
// built from planar Q1_0/Q2_0 codes: the prefill GEMMs (matmul_mmq.cuh) and
// the persistent decode's steps of several tokens (persistent.cuh) use both.
//
// The MMA is mma.sync.m16n8k32 (s8 x s8 -> s32), whose fragment layout the
// PTX ISA documents: lane l, g = l / 4, c = l % 4, holds
//   A (16 x 32, row-major): a0 = A[g][4c..4c+3], a1 = A[g+8][4c..],
//     a2 = A[g][16+4c..], a3 = A[g+8][16+4c..];
//   B (32 x 8, column n = token): b0 = B[4c..4c+3][g], b1 = B[16+4c..16+4c+3][g];
//   C (16 x 8): c0 = C[g][2c], c1 = C[g][2c+1], c2 = C[g+8][2c], c3 = C[g+8][2c+1]
// (four int8 per 32-bit register, lowest k in the lowest byte). The CPU
// emulator (tests/cuda/emulator_builtins.hpp) implements the same layout.
#ifndef BONSAI_KERNEL_EMULATION
// d += A * B for one 16x8x32 tile (the layout above).
__device__ __forceinline__ void mma_s8_m16n8k32(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile("trap;"); // the host runs it on 8.0+ only
#endif
}
#endif

// Four int8 from four bytes each in 0..3: byte - 1 (no borrow between
// bytes: each is first lifted to 0x80..0x83).
__device__ __forceinline__ u32 bytes_minus_one(u32 v) {
  return ((v | 0x80808080u) - 0x01010101u) ^ 0x80808080u;
}

// The A operand of k-step s (values 32 s .. 32 s + 31 of the block) for
// rows g and g + 8 from their codes. Word k, plane i, byte b of a planar
// block holds weight k W + 4 i + b (common_prelude.cuh). codes() gives the
// raw codes (Q1_0: 0 or 1, Q2_0: 0..3), operand() the weights over d
// (Q1_0: -1 or +1, Q2_0: code - 1). Since weight / d = CODE_SCALE x code
// - 1, a product with the weights is CODE_SCALE times the product with the
// codes less the sum of the activations.
struct MmqQ1_0 {
  static const int WORDS = 4;      // per block
  static const int CODE_SCALE = 2; // weight / d = 2 code - 1
  // Q1_0, W = 32: values 32 s + 4 c + b are bits c of word s's bytes,
  // 32 s + 16 + 4 c + b bits c + 4; a set bit is +1, a clear one -1.
  static __device__ __forceinline__ void codes(const u32 *lo, const u32 *hi, int s, int c,
                                               u32 (&a)[4]) {
    const u32 m = 0x01010101u;
    a[0] = (lo[s] >> c) & m;
    a[1] = (hi[s] >> c) & m;
    a[2] = (lo[s] >> (c + 4)) & m;
    a[3] = (hi[s] >> (c + 4)) & m;
  }
  static __device__ __forceinline__ void operand(const u32 *lo, const u32 *hi, int s, int c,
                                                 u32 (&a)[4]) {
    codes(lo, hi, s, c, a);
    for (int i = 0; i < 4; ++i)
      a[i] = bytes_minus_one(a[i] << 1);
  }
};
struct MmqQ2_0 {
  static const int WORDS = 8;
  static const int CODE_SCALE = 1; // weight / d = code - 1
  // Q2_0, W = 16: values 32 s + 4 c + b are bits 2c, 2c + 1 of word 2 s's
  // bytes, 32 s + 16 + 4 c + b those of word 2 s + 1; the weight is code - 1.
  static __device__ __forceinline__ void codes(const u32 *lo, const u32 *hi, int s, int c,
                                               u32 (&a)[4]) {
    const u32 m = 0x03030303u;
    a[0] = (lo[2 * s] >> (2 * c)) & m;
    a[1] = (hi[2 * s] >> (2 * c)) & m;
    a[2] = (lo[2 * s + 1] >> (2 * c)) & m;
    a[3] = (hi[2 * s + 1] >> (2 * c)) & m;
  }
  static __device__ __forceinline__ void operand(const u32 *lo, const u32 *hi, int s, int c,
                                                 u32 (&a)[4]) {
    codes(lo, hi, s, c, a);
    for (int i = 0; i < 4; ++i)
      a[i] = bytes_minus_one(a[i]);
  }
};

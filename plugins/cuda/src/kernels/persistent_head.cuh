// The LM head in the launch (persistent_head): each head range keeps every
// token's best row as one 64-bit key (the greater logit, then the lower
// row), publishes it per token, and the argmax instruction picks each
// token's best over the ranges.
// A logit and its row as one number whose larger value is the better row:
// the greater logit, then the lower row (as bonsai_argmax picks). NaN is
// below every key of a number, like "none yet" (0): it never wins, and a
// token whose logits are all NaN gets row 0. -0 and +0 are equal.
__device__ __forceinline__ unsigned long long pk_best_key(float value, int row) {
  if (value != value)
    return 0ull;
  const u32 bits = value == 0.0f ? 0u : __float_as_uint(value);
  const u32 ordered = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (unsigned long long)ordered << 32 | (unsigned long long)(~(u32)row);
}
__device__ __forceinline__ int pk_best_row(unsigned long long key) {
  return key == 0ull ? 0 : (int)~(u32)(key & 0xffffffffull);
}
__device__ __forceinline__ unsigned long long pk_max_key(unsigned long long a,
                                                         unsigned long long b) {
  return a > b ? a : b;
}
__device__ __forceinline__ unsigned long long warp_max_key(unsigned long long key) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const u32 hi = __shfl_xor_sync(0xffffffffu, (u32)(key >> 32), offset);
    const u32 lo = __shfl_xor_sync(0xffffffffu, (u32)(key & 0xffffffffull), offset);
    key = pk_max_key(key, (unsigned long long)hi << 32 | lo);
  }
  return key;
}

// The LM head instruction's best row of each token, from every thread's
// keys (`best`), into its range's slots of head_best. `scratch`: shared
// memory the rows no longer read (PK_WARPS x PK_MAX_TOKENS keys).
__device__ void pk_publish_best(const PersistentArgs &a, const PkInstr &ins,
                                const unsigned long long *best, unsigned long long *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();                          // every warp is done with the staged rows
  for (int t = 0; t < PK_MAX_TOKENS; ++t) { // a constant bound: best stays put
    if (t >= a.n_tokens)
      continue;
    const unsigned long long key = warp_max_key(best[t]);
    if (lane == 0)
      scratch[warp * PK_MAX_TOKENS + t] = key;
  }
  __syncthreads();
  if ((int)threadIdx.x < a.n_tokens) {
    unsigned long long key = 0;
    for (int w = 0; w < PK_WARPS; ++w)
      key = pk_max_key(key, scratch[w * PK_MAX_TOKENS + threadIdx.x]);
    u32 *const slot = (u32 *)(a.head_best + (size_t)ins.part * PK_MAX_TOKENS + threadIdx.x);
    pk_store(slot, (u32)(key & 0xffffffffull));
    pk_store(slot + 1, (u32)(key >> 32));
  }
}

// The argmax instruction, after every LM head range has signalled: warp t
// picks token t's best over the ranges' keys (its wait's target is their
// count).
__device__ void pk_argmax(const PersistentArgs &a, const PkInstr &ins) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  static_assert(PK_MAX_TOKENS <= PK_WARPS, "a warp per token");
  if (warp >= a.n_tokens) // the same for the whole warp
    return;
  unsigned long long key = 0;
  for (int r = lane; r < ins.wait_target; r += 32) {
    const u32 *const slot = (const u32 *)(a.head_best + (size_t)r * PK_MAX_TOKENS + warp);
    key = pk_max_key(key, (unsigned long long)slot[1] << 32 | slot[0]);
  }
  key = warp_max_key(key);
  if (lane == 0)
    pk_store((u32 *)(a.argmax + warp), (u32)pk_best_row(key));
}

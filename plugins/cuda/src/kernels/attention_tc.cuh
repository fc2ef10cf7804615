// Prefill attention on f16 tensor cores (compute capability 8.0 and newer):
// the attention of one sequence's step of many tokens, after
// bonsai_qk_norm_rope has rotated the queries and stored the step's keys and
// values in the cache.
//
// A block of 4 warps takes one query head and 64 of the step's tokens (warp
// w: tokens 16 w .. 16 w + 15). It walks the keys in tiles of 64: each tile's
// keys and values are converted to f16 into shared memory, then every warp
//   S = Q K^T      (16 x 64, mma.sync.m16n8k16, f16 inputs, f32 sums),
//   masks the keys past each token's position, runs an online softmax per
//   row in registers, and
//   O += P V       (16 x head_dim, P rounded to f16 as the A operand).
// The queries stay in registers as A fragments for the whole walk; the
// score tile's C fragments become P's A fragments without passing through
// memory. Key tiles past the block's last token are never loaded, and a
// warp skips the tiles wholly past its own last token (causal tiles).
//
// mma.sync.m16n8k16.row.col.f32.f16.f16.f32, lane l, g = l / 4, c = l % 4,
// each 32-bit register two f16 (the lower index in the lower half):
//   A (16 x 16): a0 = A[g][2c..2c+1], a1 = A[g+8][2c..], a2 = A[g][2c+8..], a3 = A[g+8][2c+8..]
//   B (16 x 8):  b0 = B[2c..2c+1][g], b1 = B[2c+8..2c+9][g]
//   C (16 x 8):  c0 = C[g][2c], c1 = C[g][2c+1], c2 = C[g+8][2c], c3 = C[g+8][2c+1]
// The CPU emulator (tests/cuda/emulator_builtins.hpp) implements the same
// layout, so a fragment taken from the wrong place gives wrong numbers there.
#define ATC_WARPS 4
#define ATC_TOKENS (16 * ATC_WARPS) // tokens per block
#define ATC_KEYS 64                 // keys per tile
#define ATC_MAX_DIM 128
#define ATC_PAD 8          // f16 per shared row beyond head_dim: rows start 4 banks apart
#define ATC_SHARED_TILES 4 // keys and values as f16, then what f16 leaves of them

#ifndef BONSAI_KERNEL_EMULATION
// d += A * B for one 16x8x16 tile (the layout above).
__device__ __forceinline__ void mma_f16_m16n8k16(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile("trap;"); // the program is built for 8.0+ only
#endif
}
#endif

// Two f16 in one register, `lo` in the lower half.
__device__ __forceinline__ u32 pack_half2(float lo, float hi) {
  return (u32)float_to_half(lo) | ((u32)float_to_half(hi) << 16);
}
// What f16 leaves of v: v - f16(v), itself exact to 2^-22 relative in f16.
__device__ __forceinline__ float half_rest(float v) {
  return v - half_to_float(float_to_half(v));
}
// Two f16 from shared memory (u16 elements) as one register.
__device__ __forceinline__ u32 shared_half2(const u16 *row, int i) {
  return (u32)row[i] | ((u32)row[i + 1] << 16);
}

// The block's tokens [t0, t0 + ATC_TOKENS) of the step, query head blockIdx.x,
// grid.y = the step's tokens / ATC_TOKENS rounded up. step_info = {kv_length,
// n_tokens} of this sequence; q and out are the sequence's rows. Dynamic
// shared memory: ATC_SHARED_TILES * ATC_KEYS * (head_dim + ATC_PAD) f16. head_dim a multiple of 16,
// at most ATC_MAX_DIM.
template <class KV>
__device__ void attention_tc(const float *q, const KV *k_cache, const KV *v_cache, float *out,
                             const int *step_info, int n_head, int n_head_kv, int head_dim,
                             int max_ctx) {
  BONSAI_DYNAMIC_SHARED(u16, atc_shared);
  const int stride = head_dim + ATC_PAD;
  u16 *const k_tile = atc_shared, *const k_rest = atc_shared + ATC_KEYS * stride;
  u16 *const v_tile = atc_shared + 2 * ATC_KEYS * stride, *const v_rest =
                                                              v_tile + ATC_KEYS * stride;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, c = lane % 4;
  const int kv_length = step_info[0], n_tokens = step_info[1];
  const int head = blockIdx.x, kv_head = head / (n_head / n_head_kv);
  const int t0 = blockIdx.y * ATC_TOKENS, warp_t0 = t0 + 16 * warp;
  const int k_steps = head_dim / 16, d_tiles = head_dim / 8;
  const KV *const keys = k_cache + (size_t)kv_head * max_ctx * head_dim;
  const KV *const values = v_cache + (size_t)kv_head * max_ctx * head_dim;
  const float scale = 1.0f / sqrtf((float)head_dim);

  // The warp's 16 query rows as A fragments (rows past the step: zeros).
  u32 qa[ATC_MAX_DIM / 16][4], qr[ATC_MAX_DIM / 16][4]; // f16 of q, and what f16 leaves
  for (int ks = 0; ks < ATC_MAX_DIM / 16; ++ks)
    for (int r = 0; r < 4; ++r) {
      const int t = warp_t0 + g + 8 * (r % 2), col = 16 * ks + 2 * c + 8 * (r / 2);
      const float *row = q + ((size_t)t * n_head + head) * head_dim;
      const bool in = ks < k_steps && t < n_tokens;
      qa[ks][r] = in ? pack_half2(row[col], row[col + 1]) : 0u;
      qr[ks][r] = in ? pack_half2(half_rest(row[col]), half_rest(row[col + 1])) : 0u;
    }
  float o[ATC_MAX_DIM / 8][4];
  for (int d = 0; d < ATC_MAX_DIM / 8; ++d)
    for (int i = 0; i < 4; ++i)
      o[d][i] = 0.0f;
  float m[2] = {BONSAI_NEG_INF, BONSAI_NEG_INF}, l[2] = {0.0f, 0.0f}; // rows g and g + 8

  // Keys up to the block's last token; the warp's own bound is lower.
  const int block_last = min(t0 + ATC_TOKENS, n_tokens) - 1;
  const int n_keys = kv_length + block_last + 1;
  const int warp_keys = kv_length + min(warp_t0 + 15, n_tokens - 1) + 1;
  for (int k0 = 0; k0 < n_keys; k0 += ATC_KEYS) {
    __syncthreads(); // the previous tile is no longer read
    for (int at = threadIdx.x; at < ATC_KEYS * head_dim; at += 32 * ATC_WARPS) {
      const int j = at / head_dim, i = at % head_dim, key = k0 + j;
      const bool in = key < n_keys;
      const float k = in ? kv_load(keys, (size_t)key * head_dim + i) : 0.0f;
      k_tile[j * stride + i] = float_to_half(k);
      k_rest[j * stride + i] = float_to_half(half_rest(k));
      const float v = in ? kv_load(values, (size_t)key * head_dim + i) : 0.0f;
      v_tile[j * stride + i] = float_to_half(v);
      v_rest[j * stride + i] = float_to_half(half_rest(v));
    }
    __syncthreads();
    if (k0 >= warp_keys || warp_t0 >= n_tokens)
      continue; // every key of the tile is past every token of this warp

    // S = Q K^T for the tile's 8 groups of 8 keys.
    float s[ATC_KEYS / 8][4];
    BONSAI_UNROLL
    for (int nt = 0; nt < ATC_KEYS / 8; ++nt) {
      for (int i = 0; i < 4; ++i)
        s[nt][i] = 0.0f;
      const u16 *key_row = k_tile + (nt * 8 + g) * stride, *rest_row = key_row + ATC_KEYS * stride;
      for (int ks = 0; ks < ATC_MAX_DIM / 16; ++ks)
        if (ks < k_steps) {
          // q k = qh kh + qh kr + qr kh (+ qr kr, below f32's rounding):
          // scores exact to f32, not to f16.
          const int at = 16 * ks + 2 * c;
          const u32 kh0 = shared_half2(key_row, at), kh1 = shared_half2(key_row, at + 8);
          mma_f16_m16n8k16(s[nt], qa[ks], kh0, kh1);
          mma_f16_m16n8k16(s[nt], qa[ks], shared_half2(rest_row, at),
                           shared_half2(rest_row, at + 8));
          mma_f16_m16n8k16(s[nt], qr[ks], kh0, kh1);
        }
    }
    // Scale, causal mask, the rows' new maxima (a row's 64 scores lie with
    // the 4 lanes of its group).
    float tile_max[2] = {BONSAI_NEG_INF, BONSAI_NEG_INF};
    for (int nt = 0; nt < ATC_KEYS / 8; ++nt)
      for (int i = 0; i < 4; ++i) {
        const int row = i / 2, key = k0 + nt * 8 + 2 * c + i % 2;
        const int t = warp_t0 + g + 8 * row;
        const bool visible = t < n_tokens && key <= kv_length + t;
        s[nt][i] = visible ? s[nt][i] * scale : BONSAI_NEG_INF;
        tile_max[row] = fmaxf(tile_max[row], s[nt][i]);
      }
    float correction[2];
    for (int row = 0; row < 2; ++row) {
      tile_max[row] = fmaxf(tile_max[row], __shfl_xor_sync(0xffffffffu, tile_max[row], 1));
      tile_max[row] = fmaxf(tile_max[row], __shfl_xor_sync(0xffffffffu, tile_max[row], 2));
      const float m_new = fmaxf(m[row], tile_max[row]);
      // A row with no visible key yet (m_new = -inf) keeps everything at 0.
      correction[row] = m_new == BONSAI_NEG_INF ? 1.0f : expf(m[row] - m_new);
      m[row] = m_new;
    }
    float row_sum[2] = {0.0f, 0.0f};
    for (int nt = 0; nt < ATC_KEYS / 8; ++nt)
      for (int i = 0; i < 4; ++i) {
        const int row = i / 2;
        s[nt][i] = m[row] == BONSAI_NEG_INF ? 0.0f : expf(s[nt][i] - m[row]);
        row_sum[row] += s[nt][i];
      }
    for (int row = 0; row < 2; ++row) {
      row_sum[row] += __shfl_xor_sync(0xffffffffu, row_sum[row], 1);
      row_sum[row] += __shfl_xor_sync(0xffffffffu, row_sum[row], 2);
      l[row] = l[row] * correction[row] + row_sum[row];
    }
    for (int d = 0; d < ATC_MAX_DIM / 8; ++d)
      for (int i = 0; i < 4; ++i)
        o[d][i] *= correction[i / 2];

    // O += P V: P's A fragments are the score tile's C fragments, two
    // groups of 8 keys per 16-key step; as for the scores, P and V are each
    // an f16 plus what f16 leaves, and P V = Ph Vh + Ph Vr + Pr Vh.
    BONSAI_UNROLL
    for (int ks = 0; ks < ATC_KEYS / 16; ++ks) {
      u32 ph[4], pr[4];
      for (int r = 0; r < 4; ++r) { // constant indices: s stays in registers
        const float lo = s[2 * ks + r / 2][2 * (r % 2)], hi = s[2 * ks + r / 2][2 * (r % 2) + 1];
        ph[r] = pack_half2(lo, hi);
        pr[r] = pack_half2(half_rest(lo), half_rest(hi));
      }
      const int k0_row = 16 * ks + 2 * c;
      for (int d = 0; d < ATC_MAX_DIM / 8; ++d) {
        if (d >= d_tiles)
          continue;
        const int col = 8 * d + g;
        // B = V[keys k0_row, k0_row + 1 | + 8, + 9][col] of a tile.
        const auto b_of = [&](const u16 *tile, int r) {
          const u16 *row = tile + (k0_row + 8 * r) * stride + col;
          return (u32)row[0] | ((u32)row[stride] << 16);
        };
        const u32 vh0 = b_of(v_tile, 0), vh1 = b_of(v_tile, 1);
        mma_f16_m16n8k16(o[d], ph, vh0, vh1);
        mma_f16_m16n8k16(o[d], ph, b_of(v_rest, 0), b_of(v_rest, 1));
        mma_f16_m16n8k16(o[d], pr, vh0, vh1);
      }
    }
  }

  for (int d = 0; d < ATC_MAX_DIM / 8; ++d) {
    if (d >= d_tiles)
      continue;
    for (int i = 0; i < 4; ++i) {
      const int row = i / 2, t = warp_t0 + g + 8 * row;
      if (t < n_tokens)
        out[((size_t)t * n_head + head) * head_dim + 8 * d + 2 * c + i % 2] = o[d][i] / l[row];
    }
  }
}

extern "C" __global__ void bonsai_attention_tc(const float *q, const float *k_cache,
                                               const float *v_cache, float *out,
                                               const int *step_info, int n_head, int n_head_kv,
                                               int head_dim, int max_ctx) {
  grid_entry();
  attention_tc(q, k_cache, v_cache, out, step_info, n_head, n_head_kv, head_dim, max_ctx);
}
extern "C" __global__ void bonsai_attention_tc_f16(const float *q, const u16 *k_cache,
                                                   const u16 *v_cache, float *out,
                                                   const int *step_info, int n_head, int n_head_kv,
                                                   int head_dim, int max_ctx) {
  grid_entry();
  attention_tc(q, k_cache, v_cache, out, step_info, n_head, n_head_kv, head_dim, max_ctx);
}

// The AVX-512 kernel for Q1_0 weights stored in 32-row tiles of nibble masks
// (q1_tiles.hpp, TileFormat::Q1NibbleMasks) against Natural activations. A
// context on the avx512 set runs every Q1_0 matmul of a tiled weight here,
// whatever the number of tokens, so a token's logits do not depend on how
// many tokens its step held.
//
// One int32 lane per row: a 64-bit mask (4 inputs of 16 rows) expands with
// one masked move to the bytes u = 2 where a sign bit is set, else 0, and
// one VPDPBUSD against the 4 inputs broadcast to every lane adds
// sum_j u_j q_j to each row. With s_e = +-1 the weight signs,
//   sum_e s_e q_e = sum_e u_e q_e - sum_e q_e,
// so per block and row: sum w x = d_w (sum_s d_s S_s - dsum), S_s the
// sub-block's sum of u q (16 inputs, four VPDPBUSD), d_s its input scale.
// The float work is per sub-block and 16 rows instead of per block and row
// with the GGUF-row kernel (avx512_quant.cpp), which needs one scale
// conversion, one int-to-float conversion and two FMAs per block and row.
#if defined(__x86_64__) || defined(__i386__)

#include <cstring>

#include "kernels/avx512_intrinsics.hpp"
#include "q1_tiles.hpp"

namespace bonsai::cpu {
namespace {

// How far ahead of the block being read a tile's first pass prefetches. On
// a 2-core Xeon (8B Q1_0, bonsai bench, 2 threads) 2, 4, 8, 16, 32 and 64
// KiB gave steps of 2 and 3 tokens within noise of each other, and one
// token no worse than 4 KiB (docs/history/2026-11-28-cpu-multi-token-prefetch.md).
constexpr size_t kPrefetchAhead = 16384;
// Tokens per pass over a tile: 6 accumulators, 12 partial sums and the 8
// expanded masks of a sub-block fit the 32 registers.
constexpr int kMaxTokens = 3;

// The 64-bit mask of group n (inputs 4n..4n+3) for rows 16h..16h+15.
inline uint64_t group_mask(const uint8_t *block, int h, int n) {
  uint64_t mask;
  std::memcpy(&mask, block + kQ1TileScaleBytes + 256 * h + 8 * n, sizeof(mask));
  return mask;
}

// Inputs 4n..4n+3 of a Natural block in every lane.
BONSAI_TARGET_AVX512 inline __m512i broadcast_group(const int8_t *block, int n) {
  int32_t four;
  std::memcpy(&four, block + 4 * n, sizeof(four));
  return _mm512_set1_epi32(four);
}

// NT tokens against one tile. Per token and block, for each half h:
//   even = -dsum + sum over even s of d_s S_s, odd = sum over odd s,
//   acc += (even + odd) * d_w
// (two chains of dependent FMAs, not one, so that one token waits on half
// as many). Every token gets these operations in this order whatever NT is,
// so its result does not depend on the tokens beside it.
template <int NT>
BONSAI_TARGET_AVX512 void tile_tokens(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q,
                                      int t0, float *y, int64_t ldy, bool first_pass) {
  const __m512i twos = _mm512_set1_epi8(2);
  __m512 acc[NT][2];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t)
    acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  // The tile is read front to back from memory on its first pass (later
  // passes find it in L1), faster than the hardware prefetcher brings it
  // even with three tokens, so that pass fetches kPrefetchAhead bytes ahead
  // (integer addresses: a prefetch past the weights never faults).
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(tile) + kPrefetchAhead;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *block = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    if (first_pass) {
#pragma GCC unroll 9
      for (size_t line = 0; line < kQ1TileBlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char *>(
                         ahead + static_cast<size_t>(b) * kQ1TileBlockBytes + line),
                     _MM_HINT_T0);
    }
    __m512 even[NT][2], odd[NT][2];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      even[t][0] = even[t][1] = _mm512_set1_ps(-q.dsum_block(t0 + t, b));
      odd[t][0] = odd[t][1] = _mm512_setzero_ps();
    }
#pragma GCC unroll 8
    for (int s = 0; s < kSubsPerBlock; ++s) {
      __m512i u[4][2];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
          u[i][h] = _mm512_maskz_mov_epi8(group_mask(block, h, 4 * s + i), twos);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int8_t *x = q.q_block(t0 + t, b);
        __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m512i group = broadcast_group(x, 4 * s + i);
          sum[0] = _mm512_dpbusd_epi32(sum[0], u[i][0], group);
          sum[1] = _mm512_dpbusd_epi32(sum[1], u[i][1], group);
        }
        const __m512 d = _mm512_set1_ps(q.d_block(t0 + t, b)[s]);
        __m512(&part)[2] = s % 2 == 0 ? even[t] : odd[t];
        part[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[0]), d, part[0]);
        part[1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[1]), d, part[1]);
      }
    }
    const __m512 dw[2] = {_mm512_cvtph_ps(load256(block)), _mm512_cvtph_ps(load256(block + 32))};
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        acc[t][h] = _mm512_fmadd_ps(_mm512_add_ps(even[t][h], odd[t][h]), dw[h], acc[t][h]);
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    _mm512_storeu_ps(y + (t0 + t) * ldy, acc[t][0]);
    _mm512_storeu_ps(y + (t0 + t) * ldy + 16, acc[t][1]);
  }
}

} // namespace

void avx512_rows_q1_tiles(const RowJob &job) {
  const int64_t n_blocks = job.cols / kActBlock;
  for_each_q1_tile(job.w, job.w_row_bytes, job.n_rows, [&](const uint8_t *tile, int64_t r) {
    float *y = job.y + r;
    int t = 0;
    for (; t + kMaxTokens <= job.n_tokens; t += kMaxTokens)
      tile_tokens<kMaxTokens>(tile, n_blocks, job.q, t, y, job.ldy, t == 0);
    if (job.n_tokens - t == 2)
      tile_tokens<2>(tile, n_blocks, job.q, t, y, job.ldy, t == 0);
    else if (job.n_tokens - t == 1)
      tile_tokens<1>(tile, n_blocks, job.q, t, y, job.ldy, t == 0);
  });
}

} // namespace bonsai::cpu

#endif

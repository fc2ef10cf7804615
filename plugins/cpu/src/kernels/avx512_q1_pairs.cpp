// AVX-512 (BW + VNNI) Q1_0 kernel over rows repacked in pairs (q1_pairs.hpp)
// and Q1Pairs512 activations.
//
// One 64-bit mask holds 32 sign bits of each row of a pair; a masked move
// expands it to bytes u = 2 * bit, and VPDPBUSD against 32 activation bytes
// broadcast to both 256-bit halves sums, in lane j < 8, the first row's
// values 32k + 4j..+3 and in lane 8 + j the second row's. After a block's
// four steps, with the lane meta of the activations (the same in both
// halves) and the rows' weight scales (first row in lanes 0-7):
//   acc += d_w * (scale_lane * S - correction_lane)
// The single-row kernel this replaced paid that bookkeeping (and a scale
// conversion) for every row and block; here it serves two rows, and one
// conversion gives the scales of 8 blocks of both rows.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>

#include "kernels/avx512_quant_tile.hpp"
#include "q1_pairs.hpp"

namespace bonsai::cpu {
namespace {

using avx512_tile::kPrefetchAhead;
using avx512_tile::kTokenTile;

// Pairs per tile: decode reads 4 pairs (8 rows) side by side, so 4 chains of
// VPDPBUSD are in flight; prefill uses 2 pairs x 3 tokens.
constexpr int kDecodePairs = 4;
constexpr int kPrefillPairs = 2;

BONSAI_TARGET_AVX512 inline __m512i expand_bits(const uint8_t *p, __m512i twos) {
  uint64_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return _mm512_maskz_mov_epi8(bits, twos);
}

// NP pairs starting at pair p0 of the job against tokens [t0, t0 + NT).
template <int NP, int NT>
BONSAI_TARGET_AVX512 void pair_tile(const RowJob &job, int64_t p0, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  const size_t pair_bytes = job.w_row_bytes;
  const uint8_t *pairs = job.w + static_cast<size_t>(p0) * pair_bytes;
  const QuantizedActs &q = job.q;
  const __m512i twos = _mm512_set1_epi8(2);
  // Lanes 0-7 take scale 2j (first row of block j), lanes 8-15 scale 2j + 1.
  const __m512i first_pick = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  __m512 acc[NP][NT];
#pragma GCC unroll 8
  for (int i = 0; i < NP; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      acc[i][t] = _mm512_setzero_ps();
  // The NP pairs are one contiguous run read front to back at about `step`
  // bytes per block; fetched kPrefetchAhead bytes (at least the run) ahead,
  // as in the single-row tile. Integer addresses: a prefetch never faults,
  // but pointer arithmetic past the weights would be UB.
  const size_t run_bytes = NP * pair_bytes;
  const size_t step =
      (run_bytes + static_cast<size_t>(n_blocks) - 1) / static_cast<size_t>(n_blocks);
  const uintptr_t stream = reinterpret_cast<uintptr_t>(pairs) + std::max(kPrefetchAhead, run_bytes);
  for (int64_t g0 = 0; g0 < n_blocks; g0 += kPairGroupBlocks) {
    __m512 group_scales[NP]; // block j: first row at 2j, second at 2j + 1
#pragma GCC unroll 8
    for (int i = 0; i < NP; ++i)
      group_scales[i] = _mm512_cvtph_ps(
          load256(pairs + static_cast<size_t>(i) * pair_bytes + pair_group_offset(g0)));
    const int64_t g1 = std::min(n_blocks, g0 + kPairGroupBlocks);
    __m512i pick = first_pick;
    for (int64_t b = g0; b < g1; ++b) {
      if constexpr (NT == 1) {
        for (size_t line = 0; line < step + 64; line += 64)
          _mm_prefetch(
              reinterpret_cast<const char *>(stream + static_cast<size_t>(b) * step + line),
              _MM_HINT_T0);
      }
      const int8_t *xq = q.q_block(t0, b);
      const float *meta = q.d_block(t0, b);
      // Pair by pair, so that only one pair's unpacked bits are live (more
      // spill the accumulators); the activation loads repeat per pair but
      // hit L1.
#pragma GCC unroll 8
      for (int i = 0; i < NP; ++i) {
        const uint8_t *bits = pairs + static_cast<size_t>(i) * pair_bytes + pair_bits_offset(b);
        __m512i u[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
          u[k] = expand_bits(bits + 8 * k, twos);
        const __m512 dw = _mm512_permutexvar_ps(pick, group_scales[i]);
#pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          const int8_t *xt = xq + t * kActBlock;
          __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[0],
                                             _mm512_broadcast_i64x4(load256(xt)));
#pragma GCC unroll 4
          for (int k = 1; k < 4; ++k)
            sums = _mm512_dpbusd_epi32(sums, u[k], _mm512_broadcast_i64x4(load256(xt + 32 * k)));
          const __m512 scale = _mm512_loadu_ps(meta + t * kLaneMetaPerBlock);
          const __m512 correction = _mm512_loadu_ps(meta + t * kLaneMetaPerBlock + kLaneCount);
          const __m512 terms = _mm512_fmsub_ps(_mm512_cvtepi32_ps(sums), scale, correction);
          acc[i][t] = _mm512_fmadd_ps(terms, dw, acc[i][t]);
        }
      }
      pick = _mm512_add_epi32(pick, _mm512_set1_epi32(2));
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < NP; ++i) {
    const int64_t r = 2 * (p0 + i);
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      float *y = job.y + static_cast<int64_t>(t0 + t) * job.ldy;
      y[r] = _mm512_mask_reduce_add_ps(0x00FF, acc[i][t]);
      if (r + 1 < job.n_rows)
        y[r + 1] = _mm512_mask_reduce_add_ps(0xFF00, acc[i][t]);
    }
  }
}

// Pairs in groups of NP (then one by one) for tokens [t0, t0 + NT).
template <int NP, int NT> void pair_groups(const RowJob &job, int t0) {
  const int64_t n_pairs = (job.n_rows + 1) / 2;
  int64_t p = 0;
  for (; p + NP <= n_pairs; p += NP)
    pair_tile<NP, NT>(job, p, t0);
  for (; p < n_pairs; ++p)
    pair_tile<1, NT>(job, p, t0);
}

} // namespace

// Token tiles as in avx512_quant.cpp: 3 tokens, a remainder of 2 (or 4 as
// 2 + 2) as 2-token tiles, decode as the single-token tile.
void avx512_rows_q1_pairs(const RowJob &job) {
  int t = 0;
  while (job.n_tokens - t >= kTokenTile && job.n_tokens - t != 4) {
    pair_groups<kPrefillPairs, kTokenTile>(job, t);
    t += kTokenTile;
  }
  for (; job.n_tokens - t >= 2; t += 2)
    pair_groups<kPrefillPairs, 2>(job, t);
  if (t < job.n_tokens)
    pair_groups<kDecodePairs, 1>(job, t);
}

} // namespace bonsai::cpu

#endif

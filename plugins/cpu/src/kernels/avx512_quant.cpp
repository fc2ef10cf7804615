// AVX-512 (BW + VNNI) kernels for Q1_0 and Q2_0. Kept deliberately small:
// they mirror the AVX2 kernels step for step, with 64 values per register.
//   Q1_0: 64 sign bits are one __mmask64; masked int8 activations summed with
//         VPDPBUSD against a vector of ones give the sums over set bits.
//   Q2_0: VPDPBUSD of the unsigned codes with the signed activations.
#if defined(__x86_64__) || defined(__i386__)

#include <cstring>

// GCC 12's avx512fintrin.h trips -Wmaybe-uninitialized on its own
// _mm512_undefined_* helpers (GCC bug 105593); the warning is about the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kTokenTile = 4;

BONSAI_TARGET_AVX512 inline __m512i load512(const void *p) {
  return _mm512_loadu_si512(p);
}

BONSAI_TARGET_AVX512 inline float load_f16_512(const uint8_t *p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return _cvtsh_ss(bits);
}

// Scales from the block's 8 sub-block scales, picked per int32 lane.
BONSAI_TARGET_AVX512 inline __m512 pick_scales(const float *sub_scales, __m512i lanes) {
  return _mm512_permutexvar_ps(lanes, _mm512_castps256_ps512(_mm256_loadu_ps(sub_scales)));
}

// Q1_0 on the Natural order: 64 sign bits are the byte mask of 64 values.
// Lane j of a 64-value register covers values 4j..4j+3, sub-block j / 4.
template <int NT> BONSAI_TARGET_AVX512 void q1_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i low_subs = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i high_subs = _mm512_add_epi32(low_subs, _mm512_set1_epi32(4));
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m512 acc[NT];
    float corr[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_setzero_ps();
      corr[t] = 0.0f;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t *block = row + static_cast<size_t>(b) * sizeof(BlockQ1_0);
      const float dw = load_f16_512(block);
      uint64_t bits[2]; // bit j (LSB first) is value j
      std::memcpy(bits, block + 2, sizeof(bits));
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const int8_t *xq = job.q.q_block(t0 + t, b);
        const float *d = job.q.d_block(t0 + t, b);
        const __m512i low = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones,
                                                _mm512_maskz_mov_epi8(bits[0], load512(xq)));
        const __m512i high = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones,
                                                 _mm512_maskz_mov_epi8(bits[1], load512(xq + 64)));
        const __m512 scaled =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(high), pick_scales(d, high_subs),
                            _mm512_mul_ps(_mm512_cvtepi32_ps(low), pick_scales(d, low_subs)));
        // d_w (2 sum_s d_s S_set,s - dsum): the vector part now, dsum in corr.
        acc[t] = _mm512_fmadd_ps(scaled, _mm512_set1_ps(2.0f * dw), acc[t]);
        corr[t] += dw * job.q.dsum_block(t0 + t, b);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = _mm512_reduce_add_ps(acc[t]) - corr[t];
  }
}

// Q2_0 on the Q2Lanes order: the 32 code bytes fill both halves of a
// register; per-half shifts pick codes k = 0, 1 (then 2, 3), matching
// activation chunks 0, 1 (then 2, 3). Lane j covers sub-block j % 8.
template <int NT> BONSAI_TARGET_AVX512 void q2_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  const __m512i low2 = _mm512_set1_epi8(3);
  // _mm512_set_epi64 lists lanes 7..0: the low half shifts by the first k.
  const __m512i shift01 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i shift23 = _mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4);
  const __m512i subs = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m512 acc[NT];
    float corr[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_setzero_ps();
      corr[t] = 0.0f;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t *block = row + static_cast<size_t>(b) * sizeof(BlockQ2_0);
      const float dw = load_f16_512(block);
      const __m512i packed = _mm512_broadcast_i64x4(load256(block + 2));
      const __m512i codes01 = _mm512_and_si512(_mm512_srlv_epi64(packed, shift01), low2);
      const __m512i codes23 = _mm512_and_si512(_mm512_srlv_epi64(packed, shift23), low2);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const int8_t *xq = job.q.q_block(t0 + t, b);
        __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes01, load512(xq));
        sums = _mm512_dpbusd_epi32(sums, codes23, load512(xq + 64));
        const __m512 scaled =
            _mm512_mul_ps(_mm512_cvtepi32_ps(sums), pick_scales(job.q.d_block(t0 + t, b), subs));
        acc[t] = _mm512_fmadd_ps(scaled, _mm512_set1_ps(dw), acc[t]);
        corr[t] += dw * job.q.dsum_block(t0 + t, b);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = _mm512_reduce_add_ps(acc[t]) - corr[t];
  }
}

template <void (*Tile4)(const RowJob &, int), void (*Tile1)(const RowJob &, int)>
void run_tiles(const RowJob &job) {
  int t = 0;
  for (; t + kTokenTile <= job.n_tokens; t += kTokenTile)
    Tile4(job, t);
  for (; t < job.n_tokens; ++t)
    Tile1(job, t);
}

} // namespace

void avx512_rows_q1(const RowJob &job) {
  run_tiles<q1_tile<kTokenTile>, q1_tile<1>>(job);
}
void avx512_rows_q2(const RowJob &job) {
  run_tiles<q2_tile<kTokenTile>, q2_tile<1>>(job);
}

} // namespace bonsai::cpu

#pragma GCC diagnostic pop

#endif

#pragma once
// The AVX-512 quantized row tile and its block unpackers (the lane layouts
// of activations.hpp: Q1Mask512, Q2Lanes512). avx512_quant.cpp runs them over
// a matmul's rows and tokens; bench/cpu/ptq1_native_bench.cpp puts another
// encoding's unpacker into the same tile to compare it with these.
//
// A weight block is first turned into two registers of unsigned bytes
// u_e = w_e / d_w + 1 (64 values each): for Q1_0 the 64 sign bits of a half
// are a __mmask64 that selects 2 or 0 per byte; for Q2_0 the 2-bit codes are
// shifted and masked. The per-token work is then the same for both types:
//   S     = VPDPBUSD(VPDPBUSD(0, u_low, x_low), u_high, x_high)  (16 lanes)
//   acc  += d_w * (scale_lane * S - correction_lane)
// where the activation quantizer stored scale and correction per lane, so
// there is no shuffle, no scalar correction and no factor to apply after.
#include <algorithm>
#include <cstring>

#include "kernels/avx512_intrinsics.hpp"

namespace bonsai::cpu::avx512_tile {

// Prefill tiles: 4 rows x 3 tokens. 12 accumulators, 8 unpacked weight
// registers, 4 scales and the current token's 4 activation registers fill
// the 32 zmm registers; each activation load serves 4 rows and each unpacked
// block 3 tokens. Measured on Zen 5 (bench_cpu_kernels, 512 tokens, one
// thread): 2x8 tiles 64 ms, 2x6 63, 4x2 44, 4x4 43, 4x3 40, 6x3 46, 8x2 67.
inline constexpr int kTileRows = 4;
inline constexpr int kTokenTile = 3;
// How far ahead of the rows being read decode prefetches (bytes).
inline constexpr size_t kPrefetchAhead = 4096;

BONSAI_TARGET_AVX512 inline __m512i load512(const void *p) {
  return _mm512_loadu_si512(p);
}

// The block's f16 scale broadcast to 16 floats.
BONSAI_TARGET_AVX512 inline __m512 broadcast_f16(const uint8_t *p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(bits)));
}

// The 32 code bytes of a 128-weight block, in both halves of `packed`:
// byte b holds the codes of values 4b..4b+3, and the Q2Lanes order keeps
// code k of byte b at position 32k + b, so per-half shifts by 2k pick codes
// k = 0, 1 (low) and 2, 3 (high).
BONSAI_TARGET_AVX512 inline void split_codes(__m512i packed, __m512i &low, __m512i &high) {
  const __m512i mask = _mm512_set1_epi8(3);
  // _mm512_set_epi64 lists lanes 7..0: the low 256 bits take the first k.
  const __m512i shift01 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i shift23 = _mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4);
  low = _mm512_and_si512(_mm512_srlv_epi64(packed, shift01), mask);
  high = _mm512_and_si512(_mm512_srlv_epi64(packed, shift23), mask);
}

// Unpackers give a 128-weight block's two registers of u_e and its weight
// scale per int32 lane.
struct Q1Unpack {
  static constexpr size_t kBytes = sizeof(BlockQ1_0);
  BONSAI_TARGET_AVX512 static __m512 scales(const uint8_t *block) { return broadcast_f16(block); }
  // Bit e (LSB first) of the 16 sign bytes is value e: 2 where set, else 0.
  BONSAI_TARGET_AVX512 static void unpack(const uint8_t *block, __m512i &low, __m512i &high) {
    uint64_t bits[2];
    std::memcpy(bits, block + 2, sizeof(bits));
    const __m512i twos = _mm512_set1_epi8(2);
    low = _mm512_maskz_mov_epi8(bits[0], twos);
    high = _mm512_maskz_mov_epi8(bits[1], twos);
  }
};

struct Q2Unpack {
  static constexpr size_t kBytes = sizeof(BlockQ2_0);
  BONSAI_TARGET_AVX512 static __m512 scales(const uint8_t *block) { return broadcast_f16(block); }
  BONSAI_TARGET_AVX512 static void unpack(const uint8_t *block, __m512i &low, __m512i &high) {
    const __m512i packed = _mm512_broadcast_i64x4(load256(block + 2));
    split_codes(packed, low, high);
  }
};

// Mainline Q2_0: two 64-weight blocks (d, 16 code bytes each) make one
// 128-weight step. Their code bytes side by side are a Q2_0 block's, and
// lane j only sums values of sub-block j % 8 (Q2Lanes512), which lies in
// the first half for j % 8 < 4: those lanes take the first scale. Both are
// built before any widening: the codes with a masked broadcast from memory,
// the scales as halves blended before one conversion.
struct Q2G64Unpack {
  static constexpr size_t kBytes = 2 * sizeof(BlockQ2_0G64);
  BONSAI_TARGET_AVX512 static __m512 scales(const uint8_t *block) {
    uint16_t first, second;
    std::memcpy(&first, block, sizeof(first));
    std::memcpy(&second, block + sizeof(BlockQ2_0G64), sizeof(second));
    // Words 4..7 of each 128-bit half (lanes j % 8 >= 4) take the second.
    const __m256i halves = _mm256_blend_epi16(_mm256_set1_epi16(static_cast<short>(first)),
                                              _mm256_set1_epi16(static_cast<short>(second)), 0xF0);
    return _mm512_cvtph_ps(halves);
  }
  BONSAI_TARGET_AVX512 static void unpack(const uint8_t *block, __m512i &low, __m512i &high) {
    // 128-bit lanes: first, second, first, second.
    const __m512i first =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 2)));
    const __m512i packed = _mm512_mask_broadcast_i32x4(
        first, 0xF0F0,
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + sizeof(BlockQ2_0G64) + 2)));
    split_codes(packed, low, high);
  }
};

// NR rows against NT tokens. Each block of a row is unpacked once for the NT
// tokens, and each token's activations are loaded once for the NR rows; the
// NR * NT accumulators are independent, so the 4-cycle latency of the
// accumulating FMA is hidden (one row and one token would wait on it every
// block). Every output is computed the same way whatever NR and NT are.
//
// fetch_ahead: the rows come from memory (the first token tile over them),
// so the tile prefetches; later tiles over the same rows find them cached.
template <class Unpack, int NR, int NT>
BONSAI_TARGET_AVX512 inline void tile(const RowJob &job, int64_t r0, int t0, bool fetch_ahead) {
  const int64_t n_blocks = job.cols / kActBlock;
  const QuantizedActs &q = job.q;
  const uint8_t *rows = job.w + static_cast<size_t>(r0) * job.w_row_bytes;
  __m512 acc[NR][NT];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      acc[r][t] = _mm512_setzero_ps();
  // The NR rows are one contiguous run of NR * row_bytes, consumed at
  // NR * kBytes per block step; interleaved reads of several rows do not
  // train the hardware prefetcher, so fetch kPrefetchAhead bytes ahead.
  // The lead is at least one whole group: with a fixed lead, the last rows of
  // a group longer than it (the 8B down projection: 4 x 1,728 bytes) would be
  // read before their prefetch. Integer addresses: the prefetched bytes may
  // lie past the weights (a prefetch never faults, but pointer arithmetic
  // past an object is UB).
  constexpr size_t kStep = NR * Unpack::kBytes;
  const size_t group_bytes = kStep * static_cast<size_t>(n_blocks);
  const uintptr_t stream =
      reinterpret_cast<uintptr_t>(rows) + std::max(kPrefetchAhead, group_bytes);
  for (int64_t b = 0; b < n_blocks; ++b) {
    if (fetch_ahead) {
#pragma GCC unroll 4
      for (size_t line = 0; line < kStep + 64; line += 64)
        _mm_prefetch(reinterpret_cast<const char *>(stream + static_cast<size_t>(b) * kStep + line),
                     _MM_HINT_T0);
    }
    __m512i low[NR], high[NR];
    __m512 dw[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      const uint8_t *block =
          rows + static_cast<size_t>(r) * job.w_row_bytes + static_cast<size_t>(b) * Unpack::kBytes;
      Unpack::unpack(block, low[r], high[r]);
      dw[r] = Unpack::scales(block);
    }
    // The tile's tokens are adjacent in the block-major activations.
    const int8_t *xq = q.q_block(t0, b);
    const float *meta = q.d_block(t0, b);
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m512i x_low = load512(xq + t * kActBlock);
      const __m512i x_high = load512(xq + t * kActBlock + 64);
      const __m512 scale = _mm512_loadu_ps(meta + t * kLaneMetaPerBlock);
      const __m512 correction = _mm512_loadu_ps(meta + t * kLaneMetaPerBlock + kLaneCount);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), low[r], x_low);
        sums = _mm512_dpbusd_epi32(sums, high[r], x_high);
        const __m512 terms = _mm512_fmsub_ps(_mm512_cvtepi32_ps(sums), scale, correction);
        acc[r][t] = _mm512_fmadd_ps(terms, dw[r], acc[r][t]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
}

} // namespace bonsai::cpu::avx512_tile

// AVX-512 activation quantizer for the two lane layouts the AVX-512 matmul
// kernels read (activations.hpp). Bit-identical to quantize_act_row: the same
// amax (NaN ignored), the same scale = amax / 127 and 1 / scale per
// sub-block, round-to-nearest-even (NaN becomes 0), the same lane meta.
// Other layouts go to the scalar quantize_act_row.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>

#include "kernels/avx512_intrinsics.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kVectors = kActBlock / 16; // 8 vectors of 16 floats per block

// |x| with NaN replaced by 0, so that max never picks a NaN (the scalar
// quantizer's std::max(amax, |x|) ignores NaN the same way).
BONSAI_TARGET_AVX512 inline __m512 abs_no_nan(__m512 x) {
  const __mmask16 ordered = _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q);
  return _mm512_maskz_mov_ps(ordered, _mm512_abs_ps(x));
}

// Max over each aligned group of 4 lanes, broadcast within the group.
BONSAI_TARGET_AVX512 inline __m512 max_in_fours(__m512 v) {
  v = _mm512_max_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_max_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
}

// Lane 0: max over the even lanes, lane 1: max over the odd lanes.
BONSAI_TARGET_AVX512 inline __m512 max_by_parity(__m512 v) {
  v = _mm512_max_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
}

// Rounds x * inv to int32 lanes in [-127, 127]; NaN lanes become 0. Clamped
// before the conversion: a denormal amax makes inv infinite, and +inf must
// give 127 as in the scalar code, not the conversion's INT_MIN.
BONSAI_TARGET_AVX512 inline __m512i round_clamped(__m512 x, __m512 inv) {
  const __m512 scaled = _mm512_mul_ps(x, inv);
  const __mmask16 ordered = _mm512_cmp_ps_mask(scaled, scaled, _CMP_ORD_Q);
  const __m512 clamped =
      _mm512_min_ps(_mm512_max_ps(scaled, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_maskz_cvtps_epi32(ordered, clamped); // MXCSR rounding: nearest even
}

// Four int32 vectors (16 values each) narrowed to 64 bytes in order.
BONSAI_TARGET_AVX512 inline __m512i narrow4(const __m512i *q) {
  __m512i out = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(q[0]));
  out = _mm512_inserti32x4(out, _mm512_cvtepi32_epi8(q[1]), 1);
  out = _mm512_inserti32x4(out, _mm512_cvtepi32_epi8(q[2]), 2);
  return _mm512_inserti32x4(out, _mm512_cvtepi32_epi8(q[3]), 3);
}

// Scales and inverse scales of the 16 lanes (the scale groups of both
// layouts) from their amax, exactly as the scalar quantizer computes them.
struct LaneScales {
  alignas(64) float scale[kLaneCount];
  alignas(64) float inv[kLaneCount];
};
inline LaneScales lane_scales(const float *amax) {
  LaneScales s;
  for (int i = 0; i < kLaneCount; ++i) {
    s.scale[i] = amax[i] / 127.0f;
    s.inv[i] = s.scale[i] > 0.0f ? 1.0f / s.scale[i] : 0.0f;
  }
  return s;
}

// Writes the block's 128 bytes and its lane meta: lane j sums positions
// 4j..4j+3 of both 64-byte halves and has scale[j].
BONSAI_TARGET_AVX512 inline void store_block(__m512i low, __m512i high, const LaneScales &s,
                                             int8_t *q, float *meta) {
  _mm512_storeu_si512(q, low);
  _mm512_storeu_si512(q + 64, high);
  // Signed bytes times 1 (unsigned): dpbusd with the bytes as the signed side.
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i sums =
      _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, low), ones, high);
  const __m512 scale = _mm512_load_ps(s.scale);
  _mm512_storeu_ps(meta, scale);
  _mm512_storeu_ps(meta + kLaneCount, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(sums)));
}

// Q1Mask512: natural order; lane j = values 4j..4j+3 and 64+4j..64+4j+3,
// i.e. lanes 4(j % 4).. of vectors j / 4 and 4 + j / 4.
BONSAI_TARGET_AVX512 void quantize_q1_mask(const float *xb, int8_t *q, float *meta) {
  __m512 x[kVectors];
  for (int k = 0; k < kVectors; ++k)
    x[k] = _mm512_loadu_ps(xb + 16 * k);
  alignas(64) float group_max[4][16];
  for (int k = 0; k < 4; ++k)
    _mm512_store_ps(group_max[k],
                    max_in_fours(_mm512_max_ps(abs_no_nan(x[k]), abs_no_nan(x[k + 4]))));
  float amax[kLaneCount];
  for (int j = 0; j < kLaneCount; ++j)
    amax[j] = group_max[j / 4][4 * (j % 4)];
  const LaneScales s = lane_scales(amax);
  const __m512 inv16 = _mm512_load_ps(s.inv);
  __m512i r[kVectors];
  for (int k = 0; k < kVectors; ++k) {
    const int first = 4 * (k % 4); // the lanes of the vector's four 4-value groups
    const __m512i pick = _mm512_setr_epi32(first, first, first, first, first + 1, first + 1,
                                           first + 1, first + 1, first + 2, first + 2, first + 2,
                                           first + 2, first + 3, first + 3, first + 3, first + 3);
    r[k] = round_clamped(x[k], _mm512_permutexvar_ps(pick, inv16));
  }
  store_block(narrow4(r), narrow4(r + 4), s, q, meta);
}

// Q2Lanes512: value e = 4b + k goes to position 32k + b; vector s holds
// values 16s..16s+15, whose even elements (k = 0, 2) are lane s and odd
// elements (k = 1, 3) lane 8 + s.
BONSAI_TARGET_AVX512 void quantize_q2_lanes(const float *xb, int8_t *q, float *meta) {
  __m512 x[kVectors];
  float amax[kLaneCount];
  for (int k = 0; k < kVectors; ++k) {
    x[k] = _mm512_loadu_ps(xb + 16 * k);
    alignas(64) float m[16];
    _mm512_store_ps(m, max_by_parity(abs_no_nan(x[k])));
    amax[k] = m[0];
    amax[8 + k] = m[1];
  }
  const LaneScales s = lane_scales(amax);
  // Within a vector, value 4j + k (j, k < 4) moves to lane 4k + j, so that
  // after narrowing, dword k of vector s holds the bytes of b = 4s..4s+3.
  const __m512i transpose = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i r[kVectors];
  for (int k = 0; k < kVectors; ++k) {
    const __m512 inv =
        _mm512_mask_blend_ps(0xAAAA, _mm512_set1_ps(s.inv[k]), _mm512_set1_ps(s.inv[8 + k]));
    r[k] = _mm512_permutexvar_epi32(transpose, round_clamped(x[k], inv));
  }
  const __m512i first = narrow4(r);      // dwords 4s + k for s = 0..3
  const __m512i second = narrow4(r + 4); // the same for s = 4..7 (index + 16)
  // Chunk k (32 bytes) = dword k of every vector s, in order of s.
  const __m512i chunks01 =
      _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const __m512i chunks23 = _mm512_add_epi32(chunks01, _mm512_set1_epi32(2));
  store_block(_mm512_permutex2var_epi32(first, chunks01, second),
              _mm512_permutex2var_epi32(first, chunks23, second), s, q, meta);
}

} // namespace

void avx512_quantize_act_row(const float *x, int64_t cols, QuantLayout layout,
                             const QuantTarget &out) {
  void (*block_fn)(const float *, int8_t *, float *) = nullptr;
  if (layout == QuantLayout::Q1Mask512)
    block_fn = quantize_q1_mask;
  else if (layout == QuantLayout::Q2Lanes512)
    block_fn = quantize_q2_lanes;
  if (block_fn == nullptr) { // the AVX2 layouts (an AVX-512 CPU has AVX2)
    avx2_quantize_act_row(x, cols, layout, out);
    return;
  }
  const int64_t n_blocks = cols / kActBlock;
  for (int64_t b = 0; b < n_blocks; ++b)
    block_fn(x + b * kActBlock, out.q + b * out.stride * kActBlock,
             out.d + b * out.stride * kLaneMetaPerBlock);
}

} // namespace bonsai::cpu

#endif

// AVX2 activation quantizer for the layouts the AVX2 and AVX-VNNI kernels
// read (Natural, Q1Lanes, Q2Lanes, Q1Tables; activations.hpp). Bit-identical to
// quantize_act_row, its specification: the same amax per 16-value scale group
// (NaN ignored), scale = amax / 127 and 1 / scale by IEEE division, rounding
// to nearest even (NaN becomes 0, the rest clamped to +-127), and dsum summed
// over the groups in the same order. The values are quantized in natural
// order and then moved to the layout by byte transposes. The 512 layouts go
// to the scalar quantizer (the AVX-512 set has its own).
#if defined(__x86_64__) || defined(__i386__)

#include <cstring>
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kVectors = kActBlock / 8; // 16 vectors of 8 floats per block

// |x| with NaN replaced by 0, so that no NaN reaches a max (the scalar
// quantizer's std::max(amax, |x|) keeps amax when |x| is NaN).
BONSAI_TARGET_AVX2 inline __m256 abs_no_nan(__m256 x) {
  const __m256 magnitude = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  return _mm256_and_ps(magnitude, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
}

// Lane g of the result: the max over the eight lanes of m[g].
BONSAI_TARGET_AVX2 inline __m256 max_of_each(const __m256 m[8]) {
  __m256 pairs[4];
  for (int i = 0; i < 4; ++i) // lanes (within halves): a0|a2, b0|b2, a1|a3, b1|b3
    pairs[i] = _mm256_max_ps(_mm256_unpacklo_ps(m[2 * i], m[2 * i + 1]),
                             _mm256_unpackhi_ps(m[2 * i], m[2 * i + 1]));
  __m256 quads[2];
  for (int i = 0; i < 2; ++i) // per half: the max of m[4i], m[4i+1], m[4i+2], m[4i+3]
    quads[i] = _mm256_max_ps(_mm256_shuffle_ps(pairs[2 * i], pairs[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(pairs[2 * i], pairs[2 * i + 1], 0xEE));
  // A lane of a quad holds one half's max; the two halves meet here.
  return _mm256_max_ps(_mm256_permute2f128_ps(quads[0], quads[1], 0x20),
                       _mm256_permute2f128_ps(quads[0], quads[1], 0x31));
}

// round(x * inv) as int32 in [-127, 127]; NaN gives 0. Clamped before the
// conversion, so +-inf give +-127 as in the scalar code.
BONSAI_TARGET_AVX2 inline __m256i round_clamped(__m256 x, __m256 inv) {
  const __m256 r =
      _mm256_round_ps(_mm256_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 clamped =
      _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(_mm256_and_ps(clamped, _mm256_cmp_ps(r, r, _CMP_ORD_Q)));
}

// Four int32 vectors (32 values) narrowed to 32 bytes in order.
BONSAI_TARGET_AVX2 inline __m256i narrow4(const __m256i *r) {
  const __m256i words01 = _mm256_packs_epi32(r[0], r[1]);
  const __m256i words23 = _mm256_packs_epi32(r[2], r[3]);
  // Dwords now hold 4 values each: r0 r1 r2 r3 (low halves) | r0 r1 r2 r3 (high).
  const __m256i bytes = _mm256_packs_epi16(words01, words23);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Q1Lanes: natural byte e = 8i + m goes to 16m + i, the transpose of 16 rows
// of 8 bytes. Each 128-bit lane (rows i, i + 1) is first ordered by m, then
// the words are transposed across lanes.
BONSAI_TARGET_AVX2 inline void to_q1_lanes(const __m256i natural[4], __m256i chunks[4]) {
  const __m256i by_column = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
                                             0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  __m256i y[4];
  for (int j = 0; j < 4; ++j) // lane L = rows 2L, 2L+1: word m = their bytes m
    y[j] = _mm256_shuffle_epi8(natural[j], by_column);
  // Per half h of the pair: words of lanes (h, h+2) then (h+4, h+6).
  const __m256i a0 = _mm256_unpacklo_epi16(y[0], y[1]);
  const __m256i a1 = _mm256_unpackhi_epi16(y[0], y[1]);
  const __m256i a2 = _mm256_unpacklo_epi16(y[2], y[3]);
  const __m256i a3 = _mm256_unpackhi_epi16(y[2], y[3]);
  // b[k], 64-bit piece p of half h: column m = 2k + p of lanes h, h+2, h+4, h+6.
  const __m256i b[4] = {_mm256_unpacklo_epi32(a0, a2), _mm256_unpackhi_epi32(a0, a2),
                        _mm256_unpacklo_epi32(a1, a3), _mm256_unpackhi_epi32(a1, a3)};
  // Interleave the even and odd lanes' words: rows 0..15 of the column.
  const __m256i interleave = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                              0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  for (int k = 0; k < 4; ++k)
    chunks[k] = _mm256_shuffle_epi8(_mm256_permute4x64_epi64(b[k], 0xD8), interleave);
}

// Q2Lanes: natural byte e = 4b + k goes to 32k + b, the transpose of 32 rows
// of 4 bytes. Each 128-bit lane (rows 4L..4L+3) is ordered by k, then the
// dwords and qwords are gathered across lanes.
BONSAI_TARGET_AVX2 inline void to_q2_lanes(const __m256i natural[4], __m256i chunks[4]) {
  const __m256i by_code = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0,
                                           4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m256i pair_lanes = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i y[4];
  for (int j = 0; j < 4; ++j) // qword k: code k of rows 8j..8j+7
    y[j] = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(natural[j], by_code), pair_lanes);
  const __m256i lo01 = _mm256_unpacklo_epi64(y[0], y[1]); // k = 0 | k = 2
  const __m256i hi01 = _mm256_unpackhi_epi64(y[0], y[1]); // k = 1 | k = 3
  const __m256i lo23 = _mm256_unpacklo_epi64(y[2], y[3]);
  const __m256i hi23 = _mm256_unpackhi_epi64(y[2], y[3]);
  chunks[0] = _mm256_permute2x128_si256(lo01, lo23, 0x20);
  chunks[1] = _mm256_permute2x128_si256(hi01, hi23, 0x20);
  chunks[2] = _mm256_permute2x128_si256(lo01, lo23, 0x31);
  chunks[3] = _mm256_permute2x128_si256(hi01, hi23, 0x31);
}

// Q1Tables: the 16 sums t[v] = sum_j (bit j of v ? +q : -q)(4n + j) of each
// group n of 4 values, low bytes then high bytes (activations.hpp). Per
// group: the 4 values repeated 8 times, signed per entry, summed in pairs and
// then fours; entry m of the first vector is v = m, of the second v = 8 + m.
BONSAI_TARGET_AVX2 inline void build_q1_tables(const int8_t *values, int8_t *tables) {
  alignas(32) static constexpr int8_t kSigns[2][32] = {
      {-1, -1, -1, -1, 1, -1, -1, -1, -1, 1, -1, -1, 1, 1, -1, -1,
       -1, -1, 1,  -1, 1, -1, 1,  -1, -1, 1, 1,  -1, 1, 1, 1,  -1},
      {-1, -1, -1, 1, 1, -1, -1, 1, -1, 1, -1, 1, 1, 1, -1, 1,
       -1, -1, 1,  1, 1, -1, 1,  1, -1, 1, 1,  1, 1, 1, 1,  1}};
  const __m256i signs_low = _mm256_load_si256(reinterpret_cast<const __m256i *>(kSigns[0]));
  const __m256i signs_high = _mm256_load_si256(reinterpret_cast<const __m256i *>(kSigns[1]));
  const __m256i ones = _mm256_set1_epi8(1);
  // After the horizontal add, halves hold v = 0..3, 8..11 | 4..7, 12..15:
  // split each int16 into its bytes, then put the dwords in v order.
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2,
                                         4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int n = 0; n < kActBlock / 4; ++n) {
    int32_t four;
    std::memcpy(&four, values + 4 * n, sizeof(four));
    const __m256i repeated = _mm256_set1_epi32(four);
    // |q| <= 127, so negating never overflows and pair sums fit int16.
    const __m256i pairs_low = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(repeated, signs_low));
    const __m256i pairs_high = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(repeated, signs_high));
    const __m256i sums = _mm256_hadd_epi16(pairs_low, pairs_high);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(tables + n * kQ1TableBytes),
                        _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(sums, split), order));
  }
}

// One block. Scale group g of the natural and Q2Lanes layouts is values
// 16g..16g+15 (vectors 2g, 2g+1); of Q1Lanes, the even (g < 4) or odd
// (g >= 4) values of 32(g % 4)..32(g % 4)+31 (vectors 4(g % 4)..+3).
BONSAI_TARGET_AVX2 void quantize_block(const float *xb, QuantLayout layout, int8_t *q, float *d,
                                       float *dsum) {
  __m256 x[kVectors];
  for (int k = 0; k < kVectors; ++k)
    x[k] = _mm256_loadu_ps(xb + 8 * k);
  const bool q1 = layout == QuantLayout::Q1Lanes;
  __m256 group_max[8];
  if (q1) {
    const __m256 even = _mm256_castsi256_ps(_mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0));
    for (int k = 0; k < 4; ++k) {
      const __m256 m =
          _mm256_max_ps(_mm256_max_ps(abs_no_nan(x[4 * k]), abs_no_nan(x[4 * k + 1])),
                        _mm256_max_ps(abs_no_nan(x[4 * k + 2]), abs_no_nan(x[4 * k + 3])));
      group_max[k] = _mm256_and_ps(m, even); // |x| >= 0: a zeroed lane never wins
      group_max[k + 4] = _mm256_andnot_ps(even, m);
    }
  } else {
    for (int g = 0; g < 8; ++g)
      group_max[g] = _mm256_max_ps(abs_no_nan(x[2 * g]), abs_no_nan(x[2 * g + 1]));
  }
  const __m256 scale = _mm256_div_ps(max_of_each(group_max), _mm256_set1_ps(127.0f));
  const __m256 inv =
      _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), scale),
                    _mm256_cmp_ps(scale, _mm256_setzero_ps(), _CMP_GT_OQ)); // 0 where scale is 0
  __m256i r[kVectors];
  for (int k = 0; k < kVectors; ++k) {
    const __m256i pick = q1 ? _mm256_setr_epi32(k / 4, k / 4 + 4, k / 4, k / 4 + 4, k / 4,
                                                k / 4 + 4, k / 4, k / 4 + 4)
                            : _mm256_set1_epi32(k / 2);
    r[k] = round_clamped(x[k], _mm256_permutevar8x32_ps(inv, pick));
  }
  __m256i natural[4], chunks[4];
  for (int j = 0; j < 4; ++j)
    natural[j] = narrow4(r + 4 * j);
  if (q1)
    to_q1_lanes(natural, chunks);
  else if (layout == QuantLayout::Q2Lanes)
    to_q2_lanes(natural, chunks);
  else
    for (int j = 0; j < 4; ++j)
      chunks[j] = natural[j];
  // Dword i of chunk j: the sum of its four bytes.
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256i dword_sums[4];
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + 32 * j), chunks[j]);
    dword_sums[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, chunks[j]), ones16);
  }
  __m256i group_sums;
  if (layout == QuantLayout::Natural) {
    // Chunk j holds groups 2j (dwords 0..3) and 2j + 1 (dwords 4..7). Two
    // horizontal adds give groups 0 2 4 6 | 1 3 5 7.
    const __m256i by_pairs = _mm256_hadd_epi32(_mm256_hadd_epi32(dword_sums[0], dword_sums[1]),
                                               _mm256_hadd_epi32(dword_sums[2], dword_sums[3]));
    group_sums = _mm256_permutevar8x32_epi32(by_pairs, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  } else {
    // Group g is dword g of every chunk in both lane layouts.
    group_sums = _mm256_add_epi32(_mm256_add_epi32(dword_sums[0], dword_sums[1]),
                                  _mm256_add_epi32(dword_sums[2], dword_sums[3]));
  }
  alignas(32) int32_t sums[8];
  _mm256_store_si256(reinterpret_cast<__m256i *>(sums), group_sums);
  _mm256_storeu_ps(d, scale);
  float block_sum = 0.0f; // in group order, as the scalar quantizer adds
  for (int g = 0; g < 8; ++g) {
    // A rounded product, then the sum, as in the scalar code: with FMA
    // enabled here the compiler could otherwise fuse them into one rounding.
    float product = d[g] * static_cast<float>(sums[g]);
    asm("" : "+x"(product));
    block_sum += product;
  }
  *dsum = block_sum;
}

} // namespace

void avx2_quantize_act_row(const float *x, int64_t cols, QuantLayout layout,
                           const QuantTarget &out) {
  quantize_row_by_blocks(x, cols, layout, out, quantize_block, build_q1_tables);
}

} // namespace bonsai::cpu

#endif

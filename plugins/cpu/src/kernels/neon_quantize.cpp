// Advanced SIMD activation quantizer for the layouts the AArch64 kernels
// read (Natural, Q1Lanes, Q2Lanes, Q1Tables, Q1TablesAndValues;
// activations.hpp). Bit-identical
// to quantize_act_row, its specification: the same amax per 16-value scale
// group (NaN ignored: FMAXNM keeps the number), scale = amax / 127 and
// 1 / scale by IEEE division, rounding to nearest even (FRINTN; NaN becomes
// 0, the rest clamped to +-127), and dsum summed over the groups in the same
// order, each product rounded before the add. The values are quantized in
// natural order and then moved to the layout by de-interleaving loads. The
// 512 layouts go to the scalar quantizer (no AArch64 kernel reads them).
#if defined(__aarch64__)

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kVectors = kActBlock / 4; // 32 vectors of 4 floats per block

// |x| with NaN as 0, so that no NaN reaches a max.
inline float32x4_t abs_no_nan(float32x4_t x) {
  return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vabsq_f32(x)), vceqq_f32(x, x)));
}

// round(x * inv) as int32 in [-127, 127]; NaN gives 0; +-inf give +-127.
inline int32x4_t round_clamped(float32x4_t x, float32x4_t inv) {
  const float32x4_t r = vrndnq_f32(vmulq_f32(x, inv));
  const float32x4_t clamped = vminq_f32(vmaxq_f32(r, vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f));
  const uint32x4_t number = vceqq_f32(r, r);
  return vcvtq_s32_f32(vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(clamped), number)));
}

// Eight int32 vectors (32 values, each in -127..127) to two registers of
// bytes in order.
inline void narrow8(const int32x4_t *r, int8x16_t out[2]) {
  for (int h = 0; h < 2; ++h) {
    const int16x8_t a =
        vuzp1q_s16(vreinterpretq_s16_s32(r[4 * h]), vreinterpretq_s16_s32(r[4 * h + 1]));
    const int16x8_t b =
        vuzp1q_s16(vreinterpretq_s16_s32(r[4 * h + 2]), vreinterpretq_s16_s32(r[4 * h + 3]));
    out[h] = vuzp1q_s8(vreinterpretq_s8_s16(a), vreinterpretq_s8_s16(b));
  }
}

// Natural bytes to Q1Lanes: value e = 8i + m to 32(m / 2) + 16(m % 2) + i.
// Pairs of bytes de-interleaved by four give chunk c's pairs (8i + 2c,
// 8i + 2c + 1); even and odd bytes then split its two halves.
inline void store_q1_lanes(const int8_t natural[kActBlock], int8_t *q) {
  const uint16x8x4_t first = vld4q_u16(reinterpret_cast<const uint16_t *>(natural));
  const uint16x8x4_t second = vld4q_u16(reinterpret_cast<const uint16_t *>(natural + 64));
  for (int c = 0; c < 4; ++c) {
    const uint8x16_t a = vreinterpretq_u8_u16(first.val[c]);
    const uint8x16_t b = vreinterpretq_u8_u16(second.val[c]);
    vst1q_u8(reinterpret_cast<uint8_t *>(q + 32 * c), vuzp1q_u8(a, b));
    vst1q_u8(reinterpret_cast<uint8_t *>(q + 32 * c + 16), vuzp2q_u8(a, b));
  }
}

// Natural bytes to Q2Lanes: value e = 4b + k to 32k + b, a de-interleave by four.
inline void store_q2_lanes(const int8_t natural[kActBlock], int8_t *q) {
  for (int half = 0; half < 2; ++half) {
    const int8x16x4_t codes = vld4q_s8(natural + 64 * half);
    for (int k = 0; k < 4; ++k)
      vst1q_s8(q + 32 * k + 16 * half, codes.val[k]);
  }
}

// One block: scales to d[0..7], its int8 values to q in `layout`, dsum.
// Scale group g of the Natural and Q2Lanes layouts is values 16g..16g+15
// (vectors 4g..4g+3); of Q1Lanes the even (g < 4) or odd (g >= 4) values
// of 32(g % 4)..32(g % 4)+31 (vectors 8(g % 4)..+7, lanes 0, 2 or 1, 3).
void quantize_block(const float *xb, QuantLayout layout, int8_t *q, float *d, float *dsum) {
  float32x4_t x[kVectors];
  for (int v = 0; v < kVectors; ++v)
    x[v] = vld1q_f32(xb + 4 * v);
  const bool q1 = layout == QuantLayout::Q1Lanes;
  float amax[kSubsPerBlock];
  if (q1) {
    for (int k = 0; k < 4; ++k) {
      float32x4_t m = abs_no_nan(x[8 * k]);
      for (int v = 1; v < 8; ++v)
        m = vmaxnmq_f32(m, abs_no_nan(x[8 * k + v]));
      const float32x2_t pairs = vmaxnm_f32(vget_low_f32(m), vget_high_f32(m));
      amax[k] = vget_lane_f32(pairs, 0);     // lanes 0 and 2: the even values
      amax[k + 4] = vget_lane_f32(pairs, 1); // lanes 1 and 3: the odd values
    }
  } else {
    for (int g = 0; g < kSubsPerBlock; ++g) {
      float32x4_t m = abs_no_nan(x[4 * g]);
      for (int v = 1; v < 4; ++v)
        m = vmaxnmq_f32(m, abs_no_nan(x[4 * g + v]));
      amax[g] = vmaxnmvq_f32(m);
    }
  }
  float inv[kSubsPerBlock];
  for (int h = 0; h < 2; ++h) {
    const float32x4_t scale = vdivq_f32(vld1q_f32(amax + 4 * h), vdupq_n_f32(127.0f));
    const uint32x4_t positive = vcgtq_f32(scale, vdupq_n_f32(0.0f)); // 0 where scale is 0
    const float32x4_t reciprocal = vdivq_f32(vdupq_n_f32(1.0f), scale);
    vst1q_f32(d + 4 * h, scale);
    vst1q_f32(inv + 4 * h,
              vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(reciprocal), positive)));
  }
  int32x4_t r[kVectors];
  int32_t sums[kSubsPerBlock];
  if (q1) {
    for (int k = 0; k < 4; ++k) {
      const float32x4_t lanes = {inv[k], inv[k + 4], inv[k], inv[k + 4]};
      int32x4_t total = vdupq_n_s32(0);
      for (int v = 8 * k; v < 8 * k + 8; ++v) {
        r[v] = round_clamped(x[v], lanes);
        total = vaddq_s32(total, r[v]);
      }
      sums[k] = vgetq_lane_s32(total, 0) + vgetq_lane_s32(total, 2);
      sums[k + 4] = vgetq_lane_s32(total, 1) + vgetq_lane_s32(total, 3);
    }
  } else {
    for (int g = 0; g < kSubsPerBlock; ++g) {
      const float32x4_t lanes = vdupq_n_f32(inv[g]);
      int32x4_t total = vdupq_n_s32(0);
      for (int v = 4 * g; v < 4 * g + 4; ++v) {
        r[v] = round_clamped(x[v], lanes);
        total = vaddq_s32(total, r[v]);
      }
      sums[g] = vaddvq_s32(total);
    }
  }
  alignas(16) int8_t natural[kActBlock];
  for (int j = 0; j < 4; ++j) {
    int8x16_t bytes[2];
    narrow8(r + 8 * j, bytes);
    vst1q_s8(natural + 32 * j, bytes[0]);
    vst1q_s8(natural + 32 * j + 16, bytes[1]);
  }
  if (q1)
    store_q1_lanes(natural, q);
  else if (layout == QuantLayout::Q2Lanes)
    store_q2_lanes(natural, q);
  else
    std::memcpy(q, natural, kActBlock);
  float block_sum = 0.0f; // in group order, as the scalar quantizer adds
  for (int g = 0; g < kSubsPerBlock; ++g) {
    // A rounded product, then the sum, as in the scalar code: the barrier
    // keeps the compiler from fusing them into one rounding.
    float product = d[g] * static_cast<float>(sums[g]);
    asm("" : "+w"(product));
    block_sum += product;
  }
  *dsum = block_sum;
}

// Q1Tables: per group n of 4 values, t[v] = sum_j (bit j of v ? +q : -q)(4n + j)
// for v < 16 as int16, stored as 16 low bytes then 16 high bytes
// (activations.hpp). Entries 8..15 are entries 0..7 plus 2 q(4n + 3).
void build_q1_tables(const int8_t values[kActBlock], int8_t *tables) {
  static constexpr int16_t kSigns[3][8] = {
      {-1, 1, -1, 1, -1, 1, -1, 1}, {-1, -1, 1, 1, -1, -1, 1, 1}, {-1, -1, -1, -1, 1, 1, 1, 1}};
  const int16x8_t sign0 = vld1q_s16(kSigns[0]), sign1 = vld1q_s16(kSigns[1]);
  const int16x8_t sign2 = vld1q_s16(kSigns[2]);
  for (int n = 0; n < kActBlock / 4; ++n) {
    int32_t four;
    std::memcpy(&four, values + 4 * n, sizeof(four));
    const int16x4_t q = vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four))));
    int16x8_t low = vmulq_lane_s16(sign0, q, 0);
    low = vmlaq_lane_s16(low, sign1, q, 1);
    low = vmlaq_lane_s16(low, sign2, q, 2);
    low = vsubq_s16(low, vdupq_lane_s16(q, 3)); // bit 3 clear: -q3
    const int16x8_t high = vaddq_s16(low, vshlq_n_s16(vdupq_lane_s16(q, 3), 1));
    const int8x16_t a = vreinterpretq_s8_s16(low), b = vreinterpretq_s8_s16(high);
    vst1q_s8(tables + n * kQ1TableBytes, vuzp1q_s8(a, b));      // low bytes, v = 0..15
    vst1q_s8(tables + n * kQ1TableBytes + 16, vuzp2q_s8(a, b)); // high bytes
  }
}

} // namespace

void neon_quantize_act_row(const float *x, int64_t cols, QuantLayout layout,
                           const QuantTarget &out) {
  quantize_row_by_blocks(x, cols, layout, out, quantize_block, build_q1_tables);
}

} // namespace bonsai::cpu

#endif

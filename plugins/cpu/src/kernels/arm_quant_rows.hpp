// The Q1_0, Q2_0 (both group sizes) and Q8_0 row kernels of the AArch64
// sets against int8 activations, as templates included by neon_quant.cpp
// (int8 products with SMULL/SMLAL: ARMv8.0), dotprod_quant.cpp and
// i8mm_quant.cpp (SDOT). The including file defines BONSAI_ARM_TARGET (the
// target attribute of every function here, possibly empty) and
// BONSAI_ARM_SDOT (0 or 1), and includes this inside its own anonymous
// namespace. (No include guard: each including file needs its own copy.)
//
// Every kernel forms, per row, token and 128-value block, the exact int32
// sum of weight times activation over each of the block's 8 scale groups
// (the weights taken signed: +-1 for Q1_0, code - 1 for Q2_0, so no dsum
// correction is needed), and then the same float operations:
//   acc_g += (float(S_g) * d_g) * dw_g   (one multiply, one fused multiply-add)
//   y = sum over g of acc_g              (arm_helpers.hpp's sum_lanes8 order)
// The int32 sums do not depend on the instructions that form them, so the
// neon, dotprod and i8mm sets give the same floats, and a token's result
// does not depend on the tile of tokens it was computed in.

// One row's weights for one 128-value block as signed bytes in two halves,
// half h serving scale groups 4h..4h+3, and those groups' weight scales.
// In the lane layouts (Q1Lanes, Q2Lanes) w[h][k] is chunk k's register at
// positions 32k + 16h.., whose 4-byte lane j is scale group 4h + j; in
// natural order (Q8_0) w[h][i] is scale group 4h + i's 16 values.
struct ArmBlockWeights {
  int8x16_t w[2][4];
  float32x4_t dw[2];
};

// Half h's group sums (lane i: scale group 4h + i) in the lane layouts.
BONSAI_ARM_TARGET inline int32x4_t lane_group_sums(const int8x16_t w[4], const int8_t *x) {
#if BONSAI_ARM_SDOT
  int32x4_t sums = vdupq_n_s32(0);
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k)
    sums = vdotq_s32(sums, w[k], vld1q_s8(x + 32 * k));
  return sums;
#else
  // |w| <= 2 and |x| <= 127: four chunks' products stay within int16.
  int16x8_t low = vdupq_n_s16(0), high = vdupq_n_s16(0);
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const int8x16_t xk = vld1q_s8(x + 32 * k);
    low = vmlal_s8(low, vget_low_s8(w[k]), vget_low_s8(xk));
    high = vmlal_high_s8(high, w[k], xk);
  }
  // Pairs, then pairs of pairs: lane j sums bytes 4j..4j+3, as SDOT's does.
  return vpaddq_s32(vpaddlq_s16(low), vpaddlq_s16(high));
#endif
}

// Half h's group sums in natural order: w[i] and x + 16i are one group.
BONSAI_ARM_TARGET inline int32x4_t natural_group_sums(const int8x16_t w[4], const int8_t *x) {
  int32x4_t part[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const int8x16_t xi = vld1q_s8(x + 16 * i);
#if BONSAI_ARM_SDOT
    part[i] = vdotq_s32(vdupq_n_s32(0), w[i], xi);
#else
    // |w x| <= 128 * 127: two products fit int16, so widen after each pair.
    part[i] = vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(w[i]), vget_low_s8(xi))),
                          vmull_high_s8(w[i], xi));
#endif
  }
  return vpaddq_s32(vpaddq_s32(part[0], part[1]), vpaddq_s32(part[2], part[3]));
}

// Q1_0 against Q1Lanes: chunk k holds bit 2k of the 16 sign bytes, then bit
// 2k + 1; a set bit is +1, a clear one -1.
struct ArmQ1 {
  static constexpr size_t kBytes = sizeof(BlockQ1_0);
  static constexpr bool kNatural = false;
  BONSAI_ARM_TARGET static void load(const uint8_t *block, ArmBlockWeights &out) {
    const uint8x16_t signs = vld1q_u8(block + 2);
    const int8x16_t plus = vdupq_n_s8(1), minus = vdupq_n_s8(-1);
#pragma GCC unroll 8
    for (int bit = 0; bit < 8; ++bit) // bit 2k + h: chunk k, half h
      out.w[bit % 2][bit / 2] =
          vbslq_s8(vtstq_u8(signs, vdupq_n_u8(static_cast<uint8_t>(1u << bit))), plus, minus);
    out.dw[0] = out.dw[1] = vdupq_n_f32(load_f16_scale(block));
  }
};

// Sixteen bytes of two-bit codes (byte i holds values 4i..4i+3) against
// Q2Lanes: chunk k is code k of every byte, minus 1.
BONSAI_ARM_TARGET inline void unpack_codes(uint8x16_t packed, int8x16_t w[4]) {
  const uint8x16_t low2 = vdupq_n_u8(3);
  const int8x16_t one = vdupq_n_s8(1);
  w[0] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, low2)), one);
  w[1] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(packed, 2), low2)), one);
  w[2] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(packed, 4), low2)), one);
  w[3] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 6)), one);
}

// Q2_0, 128 values per block (one scale).
struct ArmQ2 {
  static constexpr size_t kBytes = sizeof(BlockQ2_0);
  static constexpr bool kNatural = false;
  BONSAI_ARM_TARGET static void load(const uint8_t *block, ArmBlockWeights &out) {
    unpack_codes(vld1q_u8(block + 2), out.w[0]);
    unpack_codes(vld1q_u8(block + 18), out.w[1]);
    out.dw[0] = out.dw[1] = vdupq_n_f32(load_f16_scale(block));
  }
};

// Mainline Q2_0: two 64-value blocks per 128 activations, groups 0..3 take
// the first scale and 4..7 the second.
struct ArmQ2G64 {
  static constexpr size_t kBytes = 2 * sizeof(BlockQ2_0G64);
  static constexpr bool kNatural = false;
  BONSAI_ARM_TARGET static void load(const uint8_t *pair, ArmBlockWeights &out) {
    const uint8_t *second = pair + sizeof(BlockQ2_0G64);
    unpack_codes(vld1q_u8(pair + 2), out.w[0]);
    unpack_codes(vld1q_u8(second + 2), out.w[1]);
    out.dw[0] = vdupq_n_f32(load_f16_scale(pair));
    out.dw[1] = vdupq_n_f32(load_f16_scale(second));
  }
};

// Q8_0: four 32-value blocks per 128 activations, each scale serving two
// scale groups.
struct ArmQ8 {
  static constexpr size_t kBytes = 4 * sizeof(BlockQ8_0);
  static constexpr bool kNatural = true;
  BONSAI_ARM_TARGET static void load(const uint8_t *blocks, ArmBlockWeights &out) {
    float dw[4];
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const uint8_t *block = blocks + g * sizeof(BlockQ8_0);
      dw[g] = load_f16_scale(block);
      out.w[g / 2][2 * (g % 2)] = vld1q_s8(reinterpret_cast<const int8_t *>(block + 2));
      out.w[g / 2][2 * (g % 2) + 1] = vld1q_s8(reinterpret_cast<const int8_t *>(block + 18));
    }
    out.dw[0] = float32x4_t{dw[0], dw[0], dw[1], dw[1]};
    out.dw[1] = float32x4_t{dw[2], dw[2], dw[3], dw[3]};
  }
};

// Half h's group sums of one token's block x.
template <class Weights>
BONSAI_ARM_TARGET inline int32x4_t group_sums(const ArmBlockWeights &w, int h, const int8_t *x) {
  if constexpr (Weights::kNatural)
    return natural_group_sums(w.w[h], x + 64 * h);
  else
    return lane_group_sums(w.w[h], x + 16 * h);
}

// The float step every kernel applies per row, token and half block
// (above): d is the token's 8 scales of the block.
BONSAI_ARM_TARGET inline float32x4_t accumulate(float32x4_t acc, int32x4_t sums, const float *d,
                                                const ArmBlockWeights &w, int h) {
  return vfmaq_f32(acc, vmulq_f32(vcvtq_f32_s32(sums), vld1q_f32(d + 4 * h)), w.dw[h]);
}

// One row at a time against NT tokens from t0: each block's weights are
// unpacked once for the NT tokens.
template <class Weights, int NT> BONSAI_ARM_TARGET void arm_rows_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  const QuantizedActs &q = job.q;
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    float32x4_t acc[NT][2];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
      ArmBlockWeights w;
      Weights::load(row + static_cast<size_t>(b) * Weights::kBytes, w);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t)
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
          acc[t][h] = accumulate(acc[t][h], group_sums<Weights>(w, h, q.q_block(t0 + t, b)),
                                 q.d_block(t0 + t, b), w, h);
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = sum_lanes8(acc[t][0], acc[t][1]);
  }
}

// Tokens per tile of the SDOT/SMLAL kernels: a block's unpacked weights
// (8 registers) serve 4 tokens, whose 8 accumulators stay in registers.
constexpr int kArmTokenTile = 4;

template <class Weights> BONSAI_ARM_TARGET void arm_rows(const RowJob &job) {
  int t = 0;
  for (; t + kArmTokenTile <= job.n_tokens; t += kArmTokenTile)
    arm_rows_tile<Weights, kArmTokenTile>(job, t);
  for (; t < job.n_tokens; ++t)
    arm_rows_tile<Weights, 1>(job, t);
}

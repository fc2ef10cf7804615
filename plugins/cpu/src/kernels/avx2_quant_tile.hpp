// The Q1_0 / Q2_0 row kernels of the AVX2 sets, as templates included by
// two files: avx2_quant.cpp (plain AVX2: the int8 dot products with
// vpmaddubsw + vpmaddwd) and avxvnni_quant.cpp (AVX-VNNI: one vpdpbusd per
// 32 bytes). The including file defines BONSAI_QUANT_TARGET (the target
// attribute of every function here) and BONSAI_QUANT_VNNI (0 or 1), and
// includes this inside its own anonymous namespace. Both give the same
// int32 sums, so the two sets' results are bit-identical.
// (No include guard: each including file needs its own copy.)

// 0/1 bytes of the Q1Lanes order (activations.hpp): the 16 sign bytes in
// both halves of a register, chunk c keeps bit c in the low half and bit
// c + 4 in the high half; min(bit, 1) turns a set bit into exactly 1. No
// shuffle: two operations per 32 weights.
BONSAI_QUANT_TARGET inline void expand_q1_signs(const uint8_t *signs, __m256i bit[4]) {
  const __m256i bytes =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(signs)));
  const __m256i one = _mm256_set1_epi8(1);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i plane = _mm256_setr_m128i(_mm_set1_epi8(static_cast<char>(1 << (2 * c))),
                                            _mm_set1_epi8(static_cast<char>(1 << (2 * c + 1))));
    bit[c] = _mm256_min_epu8(_mm256_and_si256(bytes, plane), one);
  }
}

// Lane j: sum over scale group j of unpacked weight byte (0/1 sign bit, or a
// 2-bit code) times int8 activation, in the layout the weight type asks for.
BONSAI_QUANT_TARGET inline __m256i chunk_sums(const __m256i unpacked[4], const int8_t *xq) {
#if BONSAI_QUANT_VNNI
  // Lane j gathers bytes 4j..4j+3 of each chunk, as the vpmaddwd below does.
  __m256i s = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), unpacked[0], load256(xq));
  s = _mm256_dpbusd_avx_epi32(s, unpacked[1], load256(xq + 32));
  s = _mm256_dpbusd_avx_epi32(s, unpacked[2], load256(xq + 64));
  return _mm256_dpbusd_avx_epi32(s, unpacked[3], load256(xq + 96));
#else
  // |pair sum| <= 2 * 3 * 127 per chunk; four chunks stay within int16.
  __m256i s = _mm256_maddubs_epi16(unpacked[0], load256(xq));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(unpacked[1], load256(xq + 32)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(unpacked[2], load256(xq + 64)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(unpacked[3], load256(xq + 96)));
  return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
#endif
}

// Unpackers: the f16 scale and four 32-byte chunks of a weight block.
// kVectorFactor: the block dot is d_w (kVectorFactor sum_s d_s S_s - dsum).
struct Q1Unpack {
  static constexpr size_t kBytes = sizeof(BlockQ1_0);
  static constexpr float kVectorFactor = 2.0f;
  BONSAI_QUANT_TARGET static void unpack(const uint8_t *block, __m256i out[4]) {
    expand_q1_signs(block + 2, out);
  }
};
struct Q2Unpack {
  static constexpr size_t kBytes = sizeof(BlockQ2_0);
  static constexpr float kVectorFactor = 1.0f;
  // Byte i holds the codes of values 4i..4i+3; shifting by 2k picks the
  // code of value 4i+k, which the Q2Lanes order stores at 32k+i.
  BONSAI_QUANT_TARGET static void unpack(const uint8_t *block, __m256i out[4]) {
    const __m256i low2 = _mm256_set1_epi8(3);
    const __m256i packed = load256(block + 2);
    out[0] = _mm256_and_si256(packed, low2);
    out[1] = _mm256_and_si256(_mm256_srli_epi16(packed, 2), low2);
    out[2] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low2);
    out[3] = _mm256_and_si256(_mm256_srli_epi16(packed, 6), low2);
  }
};

// Blocks per segment of a row: the weight scales of a segment are kept on
// the stack for the correction term.
constexpr int64_t kSegmentBlocks = 64;

// corr[t] += sum_b dw[b] * dsum(t, b), one fused multiply-add per block in
// block order. Eight tokens share one vector (their dsums are adjacent);
// lane arithmetic equals the scalar path, so a token's result does not
// depend on the tile it was computed in.
template <int NT>
BONSAI_QUANT_TARGET inline void add_correction(const QuantizedActs &q, int t0, int64_t s0,
                                               const float *dw, int64_t n, float corr[NT]) {
  if constexpr (NT == 8) {
    __m256 acc = _mm256_loadu_ps(corr);
    for (int64_t i = 0; i < n; ++i)
      acc =
          _mm256_fmadd_ps(_mm256_set1_ps(dw[i]), _mm256_loadu_ps(q.dsum + q.slot(t0, s0 + i)), acc);
    _mm256_storeu_ps(corr, acc);
  } else {
    for (int t = 0; t < NT; ++t) {
      __m128 acc = _mm_set_ss(corr[t]);
      for (int64_t i = 0; i < n; ++i)
        acc = _mm_fmadd_ss(_mm_set_ss(dw[i]), _mm_set_ss(q.dsum_block(t0 + t, s0 + i)), acc);
      corr[t] = _mm_cvtss_f32(acc);
    }
  }
}

// One row against NT tokens: each weight block is unpacked once and applied
// to all NT tokens, whose accumulators stay in registers. Per token:
//   y = kVectorFactor * sum_b d_w,b sum_s d_s S_s  -  sum_b d_w,b dsum_b
// (the factor is a power of two, so applying it at the end is exact).
template <class Unpack, int NT> BONSAI_QUANT_TARGET void quant_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  const QuantizedActs &q = job.q;
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m256 acc[NT];
    alignas(32) float corr[NT];
    float corr1 = 0.0f;
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      corr[t] = 0.0f;
    }
    for (int64_t s0 = 0; s0 < n_blocks; s0 += kSegmentBlocks) {
      const int64_t s1 = std::min(n_blocks, s0 + kSegmentBlocks);
      [[maybe_unused]] float dw_seg[kSegmentBlocks];
      for (int64_t b = s0; b < s1; ++b) {
        const uint8_t *block = row + static_cast<size_t>(b) * Unpack::kBytes;
        const float dw = load_f16(block);
        if constexpr (NT == 1) // one token: the same fused multiply-add, inline
          corr1 = std::fma(dw, q.dsum_block(t0, b), corr1);
        else
          dw_seg[b - s0] = dw;
        const __m256 dw_v = _mm256_set1_ps(dw);
        __m256i unpacked[4];
        Unpack::unpack(block, unpacked);
        // The tile's tokens are adjacent in the block-major activations.
        const int8_t *xq = q.q_block(t0, b);
        const float *xd = q.d_block(t0, b);
#pragma GCC unroll 16
        for (int t = 0; t < NT; ++t) {
          const __m256 scaled =
              _mm256_mul_ps(_mm256_cvtepi32_ps(chunk_sums(unpacked, xq + t * kActBlock)),
                            _mm256_loadu_ps(xd + t * kSubsPerBlock));
          acc[t] = _mm256_fmadd_ps(scaled, dw_v, acc[t]);
        }
      }
      if constexpr (NT > 1)
        add_correction<NT>(q, t0, s0, dw_seg, s1 - s0, corr);
    }
    if constexpr (NT == 1)
      corr[0] = corr1;
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] =
          Unpack::kVectorFactor * hsum256(acc[t]) - corr[t];
  }
}

// Mainline Q2_0 (two 64-weight blocks per 128 activations): the 32 code
// bytes of a pair, as one Q2_0 block's. With two weight scales per
// activation block there is no single dsum correction, so each lane's sum is
// taken signed: sum k x with k = code - 1, as sum code x - sum x. The codes
// are unsigned bytes (chunk_sums takes them as they are) and sum x, per
// token, block and lane, is computed once per tile of tokens (lane_sums),
// not once per row. Sub-block lane j (values 16j..16j+15) takes the first
// scale for j < 4.
constexpr int64_t kMaxLaneSumBlocks = 256; // 32,768 inputs; wider rows take the signed form

// Per token of the tile and block: lane j = sum of the quantized values of
// sub-block j (Q2Lanes: bytes 4j..4j+3 of each chunk).
template <int NT>
BONSAI_QUANT_TARGET void lane_sums(const QuantizedActs &q, int t0, int64_t n_blocks, __m256i *out) {
  const __m256i ones8 = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < n_blocks; ++b)
    for (int t = 0; t < NT; ++t) {
      const int8_t *xq = q.q_block(t0 + t, b);
      __m256i s = _mm256_maddubs_epi16(ones8, load256(xq));
      for (int c = 1; c < 4; ++c)
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(ones8, load256(xq + 32 * c)));
      out[b * NT + t] = _mm256_madd_epi16(s, _mm256_set1_epi16(1));
    }
}

template <int NT> BONSAI_QUANT_TARGET void q2_g64_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  constexpr size_t kPairBytes = 2 * sizeof(BlockQ2_0G64);
  const bool by_codes = n_blocks <= kMaxLaneSumBlocks;
  __m256i x_sums[kMaxLaneSumBlocks * NT]; // 32 KiB at NT = 4
  if (by_codes)
    lane_sums<NT>(job.q, t0, n_blocks, x_sums);
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m256 acc[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t *pair = row + static_cast<size_t>(b) * kPairBytes;
      const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i *>(pair + 2));
      const __m128i second =
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(pair + sizeof(BlockQ2_0G64) + 2));
      const __m256i packed = _mm256_set_m128i(second, first);
      const __m256i low2 = _mm256_set1_epi8(3);
      const __m256 dw = _mm256_setr_m128(_mm_set1_ps(load_f16(pair)),
                                         _mm_set1_ps(load_f16(pair + sizeof(BlockQ2_0G64))));
      __m256i codes[4];
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c)
        codes[c] = _mm256_and_si256(_mm256_srli_epi16(packed, 2 * c), low2);
      if (by_codes) {
#pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          const __m256i sums =
              _mm256_sub_epi32(chunk_sums(codes, job.q.q_block(t0 + t, b)), x_sums[b * NT + t]);
          const __m256 scaled =
              _mm256_mul_ps(_mm256_cvtepi32_ps(sums), _mm256_loadu_ps(job.q.d_block(t0 + t, b)));
          acc[t] = _mm256_fmadd_ps(scaled, dw, acc[t]);
        }
        continue;
      }
      // Wider rows: the products signed, |k| * (x with k's sign).
      const __m256i one = _mm256_set1_epi8(1);
      __m256i k[4], k_abs[4];
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        k[c] = _mm256_sub_epi8(codes[c], one);
        k_abs[c] = _mm256_sign_epi8(k[c], k[c]);
      }
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const int8_t *xq = job.q.q_block(t0 + t, b);
        __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c)
          s = _mm256_add_epi16(
              s, _mm256_maddubs_epi16(k_abs[c], _mm256_sign_epi8(load256(xq + 32 * c), k[c])));
        const __m256i sums = _mm256_madd_epi16(s, _mm256_set1_epi16(1));
        const __m256 scaled =
            _mm256_mul_ps(_mm256_cvtepi32_ps(sums), _mm256_loadu_ps(job.q.d_block(t0 + t, b)));
        acc[t] = _mm256_fmadd_ps(scaled, dw, acc[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = hsum256(acc[t]);
  }
}

// How far ahead of the rows being read the single-token kernel prefetches.
inline constexpr size_t kPrefetchAhead = 4096;

// One token against NR rows at a time (decode): each row keeps its own
// accumulators and adds its blocks in the same order as quant_tile<Unpack,
// 1>, so the results are bit for bit that kernel's. The NR rows are one
// contiguous run read from NR places at once, which does not train the
// hardware prefetcher: the kernel prefetches kPrefetchAhead bytes ahead (at
// least one whole group), with integer addresses (the prefetched bytes may
// lie past the weights; a prefetch never faults).
template <class Unpack, int NR> BONSAI_QUANT_TARGET void quant_rows(const RowJob &job, int t0) {
  static_assert(NR == 4, "the rows' scales are the four lanes of one vector");
  const int64_t n_blocks = job.cols / kActBlock;
  const QuantizedActs &q = job.q;
  constexpr size_t kStep = NR * Unpack::kBytes;
  int64_t r = 0;
  for (; r + NR <= job.n_rows; r += NR) {
    const uint8_t *rows = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    const uintptr_t stream = reinterpret_cast<uintptr_t>(rows) +
                             std::max(kPrefetchAhead, kStep * static_cast<size_t>(n_blocks));
    __m256 acc[NR];
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i)
      acc[i] = _mm256_setzero_ps();
    // The NR rows' corrections as the lanes of one vector: lane i gets the
    // same fused multiply-add, in the same order, as the single-row kernel.
    __m128 corr = _mm_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
#pragma GCC unroll 4
      for (size_t line = 0; line < kStep + 64; line += 64)
        _mm_prefetch(reinterpret_cast<const char *>(stream + static_cast<size_t>(b) * kStep + line),
                     _MM_HINT_T0);
      const uint8_t *blocks = rows + static_cast<size_t>(b) * Unpack::kBytes;
      // The rows' f16 scales converted together; each row then broadcasts its
      // lane from the stack (a load, not a shuffle).
      // Spelled out: _mm_insert_epi16 in a loop needs the loop unrolled
      // (-O2) to see a constant lane, and fails to compile at -O1 or -O0.
      const size_t stride = job.w_row_bytes;
      const __m128i scale_bits = _mm_setr_epi16(
          static_cast<short>(load_u16(blocks)), static_cast<short>(load_u16(blocks + stride)),
          static_cast<short>(load_u16(blocks + 2 * stride)),
          static_cast<short>(load_u16(blocks + 3 * stride)), 0, 0, 0, 0);
      const __m128 dw = _mm_cvtph_ps(scale_bits);
      alignas(16) float dw_lanes[4];
      _mm_store_ps(dw_lanes, dw);
      corr = _mm_fmadd_ps(dw, _mm_set1_ps(q.dsum_block(t0, b)), corr);
      const int8_t *xq = q.q_block(t0, b);
      const __m256 xd = _mm256_loadu_ps(q.d_block(t0, b));
#pragma GCC unroll 4
      for (int i = 0; i < NR; ++i) {
        __m256i unpacked[4];
        Unpack::unpack(blocks + static_cast<size_t>(i) * job.w_row_bytes, unpacked);
        acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(chunk_sums(unpacked, xq)), xd),
                                 _mm256_broadcast_ss(dw_lanes + i), acc[i]);
      }
    }
    alignas(16) float corr_lanes[4];
    _mm_store_ps(corr_lanes, corr);
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i)
      job.y[static_cast<int64_t>(t0) * job.ldy + r + i] =
          Unpack::kVectorFactor * hsum256(acc[i]) - corr_lanes[i];
  }
  if (r < job.n_rows) { // the last rows, one at a time
    RowJob rest = job;
    rest.w = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    rest.n_rows = job.n_rows - r;
    rest.y = job.y + r;
    quant_tile<Unpack, 1>(rest, t0);
  }
}

template <void (*TileN)(const RowJob &, int), void (*Tile1)(const RowJob &, int), int N>
void run_tiles(const RowJob &job) {
  int t = 0;
  for (; t + N <= job.n_tokens; t += N)
    TileN(job, t);
  for (; t < job.n_tokens; ++t)
    Tile1(job, t);
}

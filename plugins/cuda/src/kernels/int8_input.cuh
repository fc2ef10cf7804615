// Activations quantized to int8 for the int8 matmuls: the decode GEMVs
// (gemv_dp4a.cuh) and the prefill GEMM on int8 tensor cores
// (matmul_mmq.cuh). One Q8Record per 128 values (a weight block): int8
// values with an f32 scale per 32 of them, x ~ scale * q, and per half
// record the sum of scale * q that the code offsets of the GEMVs need.

// The int8 activations for one weight block. Value 4 * i + b is byte b of
// q[i]. 144 bytes: records start 4 banks apart, so the 8 lanes of a
// quarter-warp reading 16 bytes each from 8 different records never share a
// bank.
struct alignas(16) Q8Record {
  u32 q[32];
  float scale[4]; // of values 32 g .. 32 g + 31
};

// Bytes of one quantized row of `cols` activations: the records, then two
// offsets (sum of scale * q over each half) per record.
#define Q8_ROW_BYTES(cols) ((cols) / 128 * (sizeof(Q8Record) + 2 * sizeof(float)))
// Distance between two tokens' quantized rows in a staging buffer, in
// 16-byte units: Q8_ROW_BYTES rounded up, so each row's records stay
// 16-byte aligned.
#define Q8_ROW_STRIDE(cols) ((Q8_ROW_BYTES(cols) + 15) / 16)

__device__ __forceinline__ u32 pack_int8x4(int a, int b, int c, int d) {
  return (u32)(a & 255) | ((u32)(b & 255) << 8) | ((u32)(c & 255) << 16) | ((u32)(d & 255) << 24);
}

// The input rows of a GEMV, one per token (blockIdx.y of the GEMV): x
// (cols floats per token, 16-byte aligned), normalized first when norm is
// not NULL: x / sqrt(mean(x^2) + eps) * norm, the arithmetic of
// bonsai_rmsnorm. A GEMV given `staged` (what bonsai_quantize_input wrote
// for these rows, Q8_ROW_STRIDE(cols) apart) reads that instead of x.
struct Dp4aInput {
  const float *x;
  const float *norm;
  float eps;
  int cols;
  const U32x4 *staged;
};

// The input of token t alone (a GEMV given `staged` may have no x: no
// offset is applied to a null pointer).
__device__ __forceinline__ Dp4aInput token_input(Dp4aInput in, int t) {
  if (in.x != 0)
    in.x += (size_t)t * in.cols;
  if (in.staged != 0)
    in.staged += (size_t)t * Q8_ROW_STRIDE(in.cols);
  return in;
}

// 1 / sqrt(mean(x^2) + eps) of the input, or 1 without a norm.
__device__ float input_scale(const Dp4aInput &in) {
  if (in.norm == 0)
    return 1.0f;
  __shared__ float scratch[32];
  float ss = 0.0f;
  for (int c = threadIdx.x; c < in.cols; c += blockDim.x)
    ss += in.x[c] * in.x[c];
  return 1.0f / sqrtf(block_sum(ss, scratch) / (float)in.cols + in.eps);
}

// Lane `lane`'s share of one record (values 4 lane .. 4 lane + 3 of the
// block: group lane / 8, half lane / 16): its four int8 codes packed, its
// group's scale and its half's offset (the sum of scale * q over the half).
// Every lane of the warp calls it for the same record.
struct Q8Lane {
  u32 codes;
  float scale, offset;
};
__device__ __forceinline__ Q8Lane quantize_lane_values(float v0, float v1, float v2, float v3) {
  float amax = fmaxf(fmaxf(fabsf(v0), fabsf(v1)), fmaxf(fabsf(v2), fabsf(v3)));
  for (int o = 4; o > 0; o >>= 1) // the 8 lanes of a group of 32 values
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  Q8Lane out;
  out.scale = amax / 127.0f;
  const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
  const int q0 = __float2int_rn(v0 * inverse), q1 = __float2int_rn(v1 * inverse);
  const int q2 = __float2int_rn(v2 * inverse), q3 = __float2int_rn(v3 * inverse);
  out.codes = pack_int8x4(q0, q1, q2, q3);
  out.offset = out.scale * (float)(q0 + q1 + q2 + q3);
  for (int o = 8; o > 0; o >>= 1) // the 16 lanes of a half
    out.offset += __shfl_xor_sync(0xffffffffu, out.offset, o);
  return out;
}

// The same, stored: the lane's codes, and its group's scale and half's
// offset by their first lanes.
__device__ __forceinline__ void quantize_lane(float v0, float v1, float v2, float v3, int lane,
                                              Q8Record *record, float *offsets) {
  const Q8Lane q = quantize_lane_values(v0, v1, v2, v3);
  record->q[lane] = q.codes;
  if (lane % 8 == 0)
    record->scale[lane / 8] = q.scale;
  if (lane % 16 == 0)
    offsets[lane / 16] = q.offset;
}

// Warp w quantizes records w, w + n_warps, ...; lane l owns values
// 4 l .. 4 l + 3 (group l / 8, half l / 16).
__device__ void quantize_activations(const Dp4aInput &in, Q8Record *records, float *offsets) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  const int n_blocks = in.cols / 128;
  const float inv_rms = input_scale(in);
  for (int b = warp; b < n_blocks; b += n_warps) {
    const size_t at = (size_t)b * 128 + 4 * lane;
    const U32x4 v = *(const U32x4 *)(in.x + at);
    float v0 = __uint_as_float(v.x), v1 = __uint_as_float(v.y);
    float v2 = __uint_as_float(v.z), v3 = __uint_as_float(v.w);
    if (in.norm != 0) {
      const U32x4 n = *(const U32x4 *)(in.norm + at);
      v0 = v0 * inv_rms * __uint_as_float(n.x), v1 = v1 * inv_rms * __uint_as_float(n.y);
      v2 = v2 * inv_rms * __uint_as_float(n.z), v3 = v3 * inv_rms * __uint_as_float(n.w);
    }
    quantize_lane(v0, v1, v2, v3, lane, &records[b], offsets + 2 * b);
  }
}

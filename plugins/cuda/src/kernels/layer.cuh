// The per-layer kernels besides the matmuls: RMSNorm, QK-norm + RoPE + KV
// store, split-K attention with its merge, and the LM head's argmax. Every
// kernel that depends on the position reads it from device memory
// (step_info[0] = KV length before the step = position of token 0), so a
// captured CUDA graph replays unchanged from step to step. The KV cache's
// element (kv_load, kv_store) is in common_prelude.cuh.

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight; one block per token.
extern "C" __global__ void bonsai_rmsnorm(const float *x, const float *weight, float *out, int n,
                                          float eps) {
  grid_entry();
  __shared__ float scratch[32];
  const size_t base = (size_t)blockIdx.x * n;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < n; c += blockDim.x)
    ss += x[base + c] * x[base + c];
  const float inv = 1.0f / sqrtf(block_sum(ss, scratch) / (float)n + eps);
  for (int c = threadIdx.x; c < n; c += blockDim.x)
    out[base + c] = x[base + c] * inv * weight[c];
}

// Per head: RMSNorm with the q/k norm weight, then NEOX RoPE on the first
// n_rot values (pairs i and i + n_rot/2, angle = pos * inv_freq[i], cos and
// sin times `magnitude`: plain or scaled RoPE rates, computed once per model
// on the host); values from n_rot on pass unturned (qwen35's partial RoPE;
// qwen3 turns all, n_rot = head_dim). Blocks x < n_head are query heads,
// read from q_src (head h of token t at (t * n_head + h) * q_head_stride:
// head_dim for qwen3, in place; 2 * head_dim for qwen35, whose query heads
// interleave with their output gates) and written to q as [t][n_head][head_dim];
// the rest are key heads, whose rotated keys and plain values go into the KV
// cache at the token's position. Cache layout: [kv_head][max_ctx][head_dim].
// Block: head_dim rounded up to 32.
template <class KV>
__device__ __forceinline__ void
qk_norm_rope(const float *q_src, int q_head_stride, float *q, const float *k, const float *v,
             const float *q_norm, const float *k_norm, KV *k_cache, KV *v_cache,
             const int *step_info, int n_head, int n_head_kv, int head_dim, int n_rot, int max_ctx,
             float eps, const double *inv_freq, float magnitude) {
  __shared__ float scratch[32];
  BONSAI_DYNAMIC_SHARED(float, normed); // head_dim floats
  const int i = threadIdx.x;
  const int t = blockIdx.y;
  const bool is_query = (int)blockIdx.x < n_head;
  const int head = is_query ? (int)blockIdx.x : (int)blockIdx.x - n_head;
  const int pos = step_info[0] + t;
  const float *src = is_query ? q_src + ((size_t)t * n_head + head) * q_head_stride
                              : k + ((size_t)t * n_head_kv + head) * head_dim;
  const float *norm = is_query ? q_norm : k_norm;
  const float value = i < head_dim ? src[i] : 0.0f;
  const float inv = 1.0f / sqrtf(block_sum(value * value, scratch) / (float)head_dim + eps);
  if (i < head_dim)
    normed[i] = value * inv * norm[i];
  __syncthreads();
  const int half = n_rot / 2;
  float *dst = q + ((size_t)t * n_head + head) * head_dim;
  const size_t at = ((size_t)head * max_ctx + pos) * head_dim;
  if (i < half) {
    const double theta = (double)pos * inv_freq[i];
    const float c = (float)(magnitude * cos(theta)), s = (float)(magnitude * sin(theta));
    const float a = normed[i], b = normed[i + half];
    if (is_query) {
      dst[i] = a * c - b * s;
      dst[i + half] = a * s + b * c;
    } else {
      kv_store(k_cache, at + i, a * c - b * s);
      kv_store(k_cache, at + i + half, a * s + b * c);
    }
  } else if (i >= n_rot && i < head_dim) {
    if (is_query)
      dst[i] = normed[i];
    else
      kv_store(k_cache, at + i, normed[i]);
  }
  if (!is_query && i < head_dim)
    kv_store(v_cache, at + i, v[((size_t)t * n_head_kv + head) * head_dim + i]);
}

// What block (head, token, split) of an attention split works on: keys
// [begin, end) of its KV head (the causal end is the token's position), and
// the slot of its partial result in part_ml / part_acc. The keys are shared
// out per step, from the length the step ends at (step_info, so a replayed
// graph adapts too): split i takes keys [i*n/S, (i+1)*n/S) of the n keys the
// step ends with, not of max_ctx, so a short context still spreads evenly
// over all S splits (none holds more than one key above another).
template <class KV> struct AttentionSlice {
  int begin, end;
  float scale;
  const float *query;
  const KV *keys, *values;
  size_t partial;
};
template <class KV>
__device__ __forceinline__ AttentionSlice<KV>
attention_slice(const float *q, const KV *k_cache, const KV *v_cache, const int *step_info,
                int head, int n_head, int n_head_kv, int head_dim, int max_ctx) {
  const int t = blockIdx.y, split = blockIdx.z, n_splits = gridDim.z;
  const int pos = step_info[0] + t;
  const long long n_keys = step_info[0] + step_info[1];
  const int kv_head = head / (n_head / n_head_kv);
  AttentionSlice<KV> s;
  s.begin = (int)(split * n_keys / n_splits);
  s.end = min((int)((split + 1) * n_keys / n_splits), pos + 1);
  s.scale = 1.0f / sqrtf((float)head_dim);
  s.query = q + ((size_t)t * n_head + head) * head_dim;
  s.keys = k_cache + (size_t)kv_head * max_ctx * head_dim;
  s.values = v_cache + (size_t)kv_head * max_ctx * head_dim;
  s.partial = ((size_t)t * n_head + head) * n_splits + split;
  return s;
}

// Split-K attention, pass 1: block (head, token, split) runs an online
// softmax over its share of the keys up to its position (attention_slice)
// and writes its
// running max m, sum l and unnormalised output. Splits past the causal end
// write m = -inf, l = 0. Thread i owns output dimension i.
template <class KV>
__device__ __forceinline__ void attention_split(const float *q, const KV *k_cache,
                                                const KV *v_cache, float *part_ml, float *part_acc,
                                                const int *step_info, int n_head, int n_head_kv,
                                                int head_dim, int max_ctx) {
  __shared__ float scratch[32];
  const int i = threadIdx.x;
  const AttentionSlice<KV> s = attention_slice(q, k_cache, v_cache, step_info, (int)blockIdx.x,
                                               n_head, n_head_kv, head_dim, max_ctx);
  const float qi = i < head_dim ? s.query[i] : 0.0f;
  float m = BONSAI_NEG_INF, l = 0.0f, acc = 0.0f;
  for (int j = s.begin; j < s.end; ++j) {
    const float kij = i < head_dim ? kv_load(s.keys, (size_t)j * head_dim + i) : 0.0f;
    const float score = block_sum(qi * kij, scratch) * s.scale;
    const float m_new = fmaxf(m, score);
    const float correction = expf(m - m_new); // 0 for the first key (m = -inf)
    const float p = expf(score - m_new);
    l = l * correction + p;
    const float vij = i < head_dim ? kv_load(s.values, (size_t)j * head_dim + i) : 0.0f;
    acc = acc * correction + p * vij;
    m = m_new;
  }
  if (i == 0) {
    part_ml[2 * s.partial] = m;
    part_ml[2 * s.partial + 1] = l;
  }
  if (i < head_dim)
    part_acc[s.partial * head_dim + i] = acc;
}

// Split-K attention, pass 1, for head_dim <= MAX_DIM and at most MAX_GROUP
// query heads per KV head: ATTN_MAX_DIM and ATTN_MAX_GROUP (every Qwen3
// model), or the wide form's 256 and 8 (qwen35's gated attention: heads of
// 256, 6 query heads per KV head). The output of
// bonsai_attention_split, from block (kv_head, token, split) for all the
// query heads of that KV head, so each key and value is read once for the
// group, and without a block barrier per key. ATTN_WARPS warps take the
// split's keys in turn, lane l holding dimensions l, l + 32, ... (MAX_DIM /
// 32 of them), so a score is one warp reduction; each warp keeps an online
// softmax per query head, and the warps' states are combined once at the
// end. Launch with 32 * ATTN_WARPS threads and n_head_kv blocks in x.
#define ATTN_WARPS 4
#define ATTN_MAX_DIM 128
#define ATTN_MAX_GROUP 4
#define ATTN_WIDE_MAX_DIM 256
#define ATTN_WIDE_MAX_GROUP 8
template <class KV, int MAX_DIM, int MAX_GROUP>
__device__ __forceinline__ void
attention_split_warps(const float *q, const KV *k_cache, const KV *v_cache, float *part_ml,
                      float *part_acc, const int *step_info, int n_head, int n_head_kv,
                      int head_dim, int max_ctx) {
  constexpr int DIMS_PER_LANE = MAX_DIM / 32;
  __shared__ float warp_m[ATTN_WARPS][MAX_GROUP], warp_l[ATTN_WARPS][MAX_GROUP];
  __shared__ float warp_acc[ATTN_WARPS][MAX_GROUP][MAX_DIM];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = n_head / n_head_kv, first_head = (int)blockIdx.x * group;
  // The slice of the group's first head; head g's query and partial follow
  // it at g * head_dim and g * n_splits.
  const AttentionSlice<KV> s = attention_slice(q, k_cache, v_cache, step_info, first_head, n_head,
                                               n_head_kv, head_dim, max_ctx);
  const int n_splits = gridDim.z;
  float qv[MAX_GROUP][DIMS_PER_LANE], acc[MAX_GROUP][DIMS_PER_LANE];
  float m[MAX_GROUP], l[MAX_GROUP];
  for (int g = 0; g < MAX_GROUP; ++g) {
    for (int r = 0; r < DIMS_PER_LANE; ++r) {
      const int dim = lane + 32 * r;
      qv[g][r] = g < group && dim < head_dim ? s.query[(size_t)g * head_dim + dim] : 0.0f;
      acc[g][r] = 0.0f;
    }
    m[g] = BONSAI_NEG_INF;
    l[g] = 0.0f;
  }
  for (int j = s.begin + warp; j < s.end; j += ATTN_WARPS) {
    const KV *key = s.keys + (size_t)j * head_dim, *value = s.values + (size_t)j * head_dim;
    float kv[DIMS_PER_LANE], vv[DIMS_PER_LANE];
    for (int r = 0; r < DIMS_PER_LANE; ++r) {
      const int dim = lane + 32 * r;
      kv[r] = dim < head_dim ? kv_load(key, dim) : 0.0f;
      vv[r] = dim < head_dim ? kv_load(value, dim) : 0.0f;
    }
    // Constant bounds with guards (group is the same for every lane): the
    // per-head arrays stay in registers.
    for (int g = 0; g < MAX_GROUP; ++g) {
      if (g >= group)
        continue;
      float partial = 0.0f;
      for (int r = 0; r < DIMS_PER_LANE; ++r)
        partial += qv[g][r] * kv[r];
      const float score = warp_sum(partial) * s.scale;
      const float m_new = fmaxf(m[g], score);
      const float correction = expf(m[g] - m_new); // 0 for the warp's first key (m = -inf)
      const float p = expf(score - m_new);
      l[g] = l[g] * correction + p;
      for (int r = 0; r < DIMS_PER_LANE; ++r)
        acc[g][r] = acc[g][r] * correction + p * vv[r];
      m[g] = m_new;
    }
  }
  for (int g = 0; g < MAX_GROUP; ++g) {
    if (g >= group)
      continue;
    if (lane == 0) {
      warp_m[warp][g] = m[g];
      warp_l[warp][g] = l[g];
    }
    for (int r = 0; r < DIMS_PER_LANE; ++r)
      if (lane + 32 * r < head_dim)
        warp_acc[warp][g][lane + 32 * r] = acc[g][r];
  }
  __syncthreads();
  for (int g = 0; g < group; ++g) {
    const size_t partial = s.partial + (size_t)g * n_splits;
    float m_max = BONSAI_NEG_INF;
    for (int w = 0; w < ATTN_WARPS; ++w)
      m_max = fmaxf(m_max, warp_m[w][g]);
    const bool empty = m_max == BONSAI_NEG_INF; // no key in this split
    if (threadIdx.x == 0) {
      float l_sum = 0.0f;
      for (int w = 0; w < ATTN_WARPS; ++w)
        l_sum += empty ? 0.0f : warp_l[w][g] * expf(warp_m[w][g] - m_max);
      part_ml[2 * partial] = m_max;
      part_ml[2 * partial + 1] = l_sum;
    }
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
      float sum = 0.0f;
      for (int w = 0; w < ATTN_WARPS; ++w)
        sum += empty ? 0.0f : warp_acc[w][g][i] * expf(warp_m[w][g] - m_max);
      part_acc[partial * head_dim + i] = sum;
    }
  }
}

// The exported kernels over the cache element KV; SUFFIX names them.
#define BONSAI_KV_KERNELS(SUFFIX, KV)                                                              \
  extern "C" __global__ void bonsai_qk_norm_rope##SUFFIX(                                          \
      const float *q_src, int q_head_stride, float *q, const float *k, const float *v,             \
      const float *q_norm, const float *k_norm, KV *k_cache, KV *v_cache, const int *step_info,    \
      int n_head, int n_head_kv, int head_dim, int n_rot, int max_ctx, float eps,                  \
      const double *inv_freq, float magnitude) {                                                   \
    grid_entry();                                                                                  \
    qk_norm_rope(q_src, q_head_stride, q, k, v, q_norm, k_norm, k_cache, v_cache, step_info,       \
                 n_head, n_head_kv, head_dim, n_rot, max_ctx, eps, inv_freq, magnitude);           \
  }                                                                                                \
  extern "C" __global__ void bonsai_attention_split##SUFFIX(                                       \
      const float *q, const KV *k_cache, const KV *v_cache, float *part_ml, float *part_acc,       \
      const int *step_info, int n_head, int n_head_kv, int head_dim, int max_ctx) {                \
    grid_entry();                                                                                  \
    attention_split(q, k_cache, v_cache, part_ml, part_acc, step_info, n_head, n_head_kv,          \
                    head_dim, max_ctx);                                                            \
  }                                                                                                \
  extern "C" __global__ void bonsai_attention_split_warps##SUFFIX(                                 \
      const float *q, const KV *k_cache, const KV *v_cache, float *part_ml, float *part_acc,       \
      const int *step_info, int n_head, int n_head_kv, int head_dim, int max_ctx) {                \
    grid_entry();                                                                                  \
    attention_split_warps<KV, ATTN_MAX_DIM, ATTN_MAX_GROUP>(                                       \
        q, k_cache, v_cache, part_ml, part_acc, step_info, n_head, n_head_kv, head_dim, max_ctx);  \
  }                                                                                                \
  extern "C" __global__ void bonsai_attention_split_warps_wide##SUFFIX(                            \
      const float *q, const KV *k_cache, const KV *v_cache, float *part_ml, float *part_acc,       \
      const int *step_info, int n_head, int n_head_kv, int head_dim, int max_ctx) {                \
    grid_entry();                                                                                  \
    attention_split_warps<KV, ATTN_WIDE_MAX_DIM, ATTN_WIDE_MAX_GROUP>(                             \
        q, k_cache, v_cache, part_ml, part_acc, step_info, n_head, n_head_kv, head_dim, max_ctx);  \
  }
BONSAI_KV_KERNELS(, float)
BONSAI_KV_KERNELS(_f16, u16)

// Split-K attention, pass 2: combines the n_splits partial results of
// (head, token) into out[t][head*head_dim + i]. The splits partition the
// keys, so one of them holds key 0 and the overall max is finite.
extern "C" __global__ void bonsai_attention_merge(const float *part_ml, const float *part_acc,
                                                  float *out, int n_head, int head_dim,
                                                  int n_splits) {
  grid_entry();
  const int i = threadIdx.x;
  const int head = blockIdx.x, t = blockIdx.y;
  if (i >= head_dim)
    return;
  const size_t first = ((size_t)t * n_head + head) * n_splits;
  float m_max = BONSAI_NEG_INF;
  for (int s = 0; s < n_splits; ++s)
    m_max = fmaxf(m_max, part_ml[2 * (first + s)]);
  float l_sum = 0.0f, acc = 0.0f;
  for (int s = 0; s < n_splits; ++s) {
    const float weight = expf(part_ml[2 * (first + s)] - m_max); // 0 for empty splits
    l_sum += part_ml[2 * (first + s) + 1] * weight;
    acc += part_acc[(first + s) * head_dim + i] * weight;
  }
  out[((size_t)t * n_head + head) * head_dim + i] = acc / l_sum;
}

// qwen35's attention output gate: attn[t][h][i] *= sigmoid(gate of head h),
// the gates being the odd head_dim-sized runs of the interleaved query
// projection (query_gate[t] = q_0 | gate_0 | q_1 | gate_1 ...). Grid
// (n_head, n_tokens), block head_dim rounded up to 32.
extern "C" __global__ void bonsai_sigmoid_gate(float *attn, const float *query_gate, int n_head,
                                               int head_dim) {
  grid_entry();
  const int i = threadIdx.x, head = blockIdx.x, t = blockIdx.y;
  if (i >= head_dim)
    return;
  const float gate = query_gate[((size_t)t * n_head + head) * 2 * head_dim + head_dim + i];
  attn[((size_t)t * n_head + head) * head_dim + i] *= 1.0f / (1.0f + expf(-gate));
}

// out[r] = argmax of logits row r (lowest id on ties); one block of 256
// threads per row.
extern "C" __global__ void bonsai_argmax(const float *logits, int n_vocab, int *out) {
  grid_entry();
  __shared__ float best_value[256];
  __shared__ int best_id[256];
  const float *row = logits + (size_t)blockIdx.x * n_vocab;
  float value = BONSAI_NEG_INF;
  int id = n_vocab; // "none yet": loses every tie against a real id
  for (int c = threadIdx.x; c < n_vocab; c += blockDim.x)
    if (row[c] > value || (row[c] == value && c < id)) {
      value = row[c];
      id = c;
    }
  best_value[threadIdx.x] = value;
  best_id[threadIdx.x] = id;
  __syncthreads();
  for (int stride = (int)blockDim.x / 2; stride > 0; stride >>= 1) {
    if ((int)threadIdx.x < stride) {
      const float v = best_value[threadIdx.x + stride];
      const int j = best_id[threadIdx.x + stride];
      if (v > best_value[threadIdx.x] ||
          (v == best_value[threadIdx.x] && j < best_id[threadIdx.x])) {
        best_value[threadIdx.x] = v;
        best_id[threadIdx.x] = j;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = best_id[0] < n_vocab ? best_id[0] : 0;
}

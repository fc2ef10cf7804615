// An attention instruction: one sequence and KV head (or one range of its
// keys): QK-norm and RoPE of the step's queries and keys, the KV append,
// causal attention over the cache with an online softmax per warp, and
// with several key ranges the last range's merge.
// The KV cache element as the cache holds it: f16 rounds.
__device__ __forceinline__ float kv_rounded(float v, const float *) {
  return v;
}
__device__ __forceinline__ float kv_rounded(float v, const u16 *) {
  return half_to_float(float_to_half(v));
}
__device__ __forceinline__ void kv_put(float *p, float v) {
  pk_store(p, v);
}
__device__ __forceinline__ void kv_put(u16 *p, float v) {
  pk_store(p, float_to_half(v));
}

// Before an attention instruction's wait, since nothing in it depends on
// the stage before: the QK-norm weights and the rotation of each of the
// sequence's step tokens, into shared memory. Phase 1 after the wait then
// loads only the Q/K/V rows; the norm weights and the rotation rates were
// two more L2 round trips on the critical path, after the reduction.
__device__ void pk_attention_constants(const PersistentArgs &a, const PkInstr &ins,
                                       PkAttention *s) {
  if (ins.begin >= a.n_sequences)
    return;
  const PkSequence &sq = a.sequences[ins.begin];
  const PkLayer &L = a.layers[ins.layer];
  const int hd = a.dims.head_dim, half = hd / 2;
  for (int i = threadIdx.x; i < hd; i += PK_THREADS) {
    s->rope.q_norm[i] = L.q_norm[i];
    s->rope.k_norm[i] = L.k_norm[i];
  }
  for (int at = threadIdx.x; at < sq.n_tokens * half; at += PK_THREADS) {
    const int t = at / half, i = at % half;
    const double theta = (double)(sq.kv_length + t) * a.rope_rates[i];
    s->rope.cos[t][i] = (float)(a.dims.rope_magnitude * cos(theta));
    s->rope.sin[t][i] = (float)(a.dims.rope_magnitude * sin(theta));
  }
}

// Phase 1 of an attention instruction: warp-sized items, each one head row
// of one token: RMSNorm with its norm weight, then NEOX RoPE by the token's
// rotation (pk_attention_constants), into `dst` (shared). Keys also go to
// the cache, as cached.
template <class KV>
__device__ void pk_norm_rope(const float *src, const float *norm, float *dst, const float *cos_t,
                             const float *sin_t, const PersistentArgs &a, KV *cache_row) {
  const int lane = threadIdx.x % 32, hd = a.dims.head_dim, half = hd / 2;
  float ss = 0.0f;
  for (int i = lane; i < hd; i += 32)
    ss += src[i] * src[i];
  const float inv = 1.0f / sqrtf(warp_sum(ss) / (float)hd + a.dims.eps);
  for (int i = lane; i < hd; i += 32)
    dst[i] = src[i] * inv * norm[i];
  __syncwarp();
  for (int i = lane; i < half; i += 32) {
    const float c = cos_t[i], s = sin_t[i];
    const float x0 = dst[i], x1 = dst[i + half];
    float r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
    if (cache_row != 0) {
      r0 = kv_rounded(r0, cache_row), r1 = kv_rounded(r1, cache_row);
      kv_put(cache_row + i, r0);
      kv_put(cache_row + i + half, r1);
    }
    dst[i] = r0;
    dst[i + half] = r1;
  }
  __syncwarp();
}

// persistent_quantize=producer: one (sequence, KV head)'s finished
// outputs, from shared memory, quantized group by group into the output
// projection's staged rows (its group x head_dim columns are whole groups:
// the host checks).
__device__ void pk_quantize_attention(const PersistentArgs &a, const PkSequence &sq, int head,
                                      const PkAttention *s) {
  if (a.quantize == 0)
    return;
  __syncthreads(); // the outputs are in shared memory
  const PkDims &d = a.dims;
  const int lane = threadIdx.x % 32, per_head = d.n_head / d.n_head_kv * d.head_dim / 128;
  for (int item = threadIdx.x / 32; item < sq.n_tokens * per_head; item += PK_WARPS) {
    const int t = item / per_head, k = item % per_head;
    const float *const v = &s->out[t][k * 128 + 4 * lane];
    pk_put_group(a, PK_OUTPUT, d.n_head * d.head_dim, sq.first_token + t, head * per_head + k, v[0],
                 v[1], v[2], v[3], 0);
  }
}

// One sequence and KV head, or one range of its keys (attention_splits >
// 1): its tokens' queries (the group's heads) and key normed and rotated,
// keys and values appended to the cache (by range 0), then causal attention
// over the range's cached keys and, in the last range, the step's own keys
// (from shared memory: the cache writes are not read back, they are for
// later steps). Split, each range writes its softmax state and the last
// range to finish merges them.
template <class KV>
__device__ void pk_attention(const PersistentArgs &a, const PkInstr &ins, int index, PkAttention *s,
                             PkControl *ctl) {
  const int seq = ins.begin, head = ins.end, split = ins.part, splits = a.attention_splits;
  if (seq >= a.n_sequences) {
    pk_mark(a, index, PK_MARK_READY);
    return;
  }
  const PkSequence sq = a.sequences[seq];
  const PkDims &d = a.dims;
  const int hd = d.head_dim, group = d.n_head / d.n_head_kv;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const size_t q_width = (size_t)d.n_head * hd, kv_width = (size_t)d.n_head_kv * hd;
  const unsigned long long layer_base =
      sq.cache + 2 * a.layer_bytes * (unsigned long long)ins.layer;
  KV *const keys = (KV *)layer_base + (size_t)head * d.max_ctx * hd;
  KV *const values = (KV *)(layer_base + a.layer_bytes) + (size_t)head * d.max_ctx * hd;
  const bool appends = split == 0, last = split == splits - 1;

  // Phase 1: (group + 2) items per token: the queries, the key, the value.
  const int per_token = group + 2;
  for (int item = warp; item < sq.n_tokens * per_token; item += PK_WARPS) {
    const int t = item / per_token, j = item % per_token;
    const int row = sq.first_token + t, pos = sq.kv_length + t;
    if (j < group) {
      pk_norm_rope<KV>(a.q + row * q_width + (size_t)(head * group + j) * hd, s->rope.q_norm,
                       s->q[t][j], s->rope.cos[t], s->rope.sin[t], a, (KV *)0);
    } else if (j == group) {
      pk_norm_rope<KV>(a.k + row * kv_width + (size_t)head * hd, s->rope.k_norm, s->k[t],
                       s->rope.cos[t], s->rope.sin[t], a,
                       appends ? keys + (size_t)pos * hd : (KV *)0);
    } else {
      const float *src = a.v + row * kv_width + (size_t)head * hd;
      for (int i = lane; i < hd; i += 32) {
        const float value = kv_rounded(src[i], values);
        s->v[t][i] = value;
        if (appends)
          kv_put(values + (size_t)pos * hd + i, value);
      }
    }
  }
  __syncthreads();
  pk_mark(a, index, PK_MARK_READY);

  // This range's cached keys [lo, hi); the last range also takes the step's.
  const int chunk = (sq.kv_length + splits - 1) / splits;
  const int lo = min(sq.kv_length, split * chunk), hi = min(sq.kv_length, lo + chunk);

  // Phase 2, per token: warps take the keys in turn, PK_KEY_BATCH at a time,
  // each keeping an online softmax per query head; the warps' states are
  // combined at the end.
  const float scale = 1.0f / sqrtf((float)hd);
  for (int t = 0; t < sq.n_tokens; ++t) {
    const int n_keys = (hi - lo) + (last ? t + 1 : 0);
    float m[PK_MAX_GROUP], l[PK_MAX_GROUP], acc[PK_MAX_GROUP][PK_DIMS_PER_LANE];
    for (int g = 0; g < PK_MAX_GROUP; ++g) {
      m[g] = BONSAI_NEG_INF;
      l[g] = 0.0f;
      for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
        acc[g][r] = 0.0f;
    }
    // A warp takes PK_KEY_BATCH keys at a time (PK_WARPS apart, so that a
    // short range still spreads over every warp) and issues all their loads
    // before it uses any: the cache comes from DRAM or L2, and one key in
    // flight per warp left long contexts waiting on latency.
    for (int first = warp; first < n_keys; first += PK_WARPS * PK_KEY_BATCH) {
      float kv[PK_KEY_BATCH][PK_DIMS_PER_LANE], vv[PK_KEY_BATCH][PK_DIMS_PER_LANE];
      BONSAI_UNROLL
      for (int u = 0; u < PK_KEY_BATCH; ++u) {
        const int idx = first + u * PK_WARPS;
        const bool real = idx < n_keys, cached = idx < hi - lo;
        const int j = cached ? lo + idx : idx - (hi - lo); // a cache position, or a step token
        BONSAI_UNROLL
        for (int r = 0; r < PK_DIMS_PER_LANE; ++r) {
          const int dim = lane + 32 * r;
          const bool in = real && dim < hd;
          kv[u][r] = !in ? 0.0f : cached ? kv_load(keys, (size_t)j * hd + dim) : s->k[j][dim];
          vv[u][r] = !in ? 0.0f : cached ? kv_load(values, (size_t)j * hd + dim) : s->v[j][dim];
        }
      }
      BONSAI_UNROLL
      for (int g = 0; g < PK_MAX_GROUP; ++g) {
        if (g >= group)
          continue;
        float score[PK_KEY_BATCH], batch_max = BONSAI_NEG_INF;
        BONSAI_UNROLL
        for (int u = 0; u < PK_KEY_BATCH; ++u) {
          float partial = 0.0f;
          for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
            if (lane + 32 * r < hd)
              partial += s->q[t][g][lane + 32 * r] * kv[u][r];
          const float dot = warp_sum(partial) * scale; // every lane: the sum is warp-wide
          score[u] = first + u * PK_WARPS < n_keys ? dot : BONSAI_NEG_INF;
          batch_max = fmaxf(batch_max, score[u]);
        }
        const float m_new = fmaxf(m[g], batch_max);  // finite: the batch's first key is real
        const float correction = expf(m[g] - m_new); // 0 for the warp's first batch
        float added = 0.0f;
        for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
          acc[g][r] *= correction;
        BONSAI_UNROLL
        for (int u = 0; u < PK_KEY_BATCH; ++u) {
          const float p = expf(score[u] - m_new); // 0 past the last key
          added += p;
          for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
            acc[g][r] += p * vv[u][r];
        }
        l[g] = l[g] * correction + added;
        m[g] = m_new;
      }
    }
    for (int g = 0; g < PK_MAX_GROUP; ++g) { // a constant bound: the arrays stay in registers
      if (g >= group)
        continue;
      if (lane == 0) {
        s->m[warp][g] = m[g];
        s->l[warp][g] = l[g];
      }
      for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
        if (lane + 32 * r < hd)
          s->acc[warp][g][lane + 32 * r] = acc[g][r];
    }
    __syncthreads();
    const int row = sq.first_token + t;
    for (int at = threadIdx.x; at < group * hd; at += PK_THREADS) {
      const int g = at / hd, i = at % hd;
      float m_max = BONSAI_NEG_INF;
      for (int w = 0; w < PK_WARPS; ++w)
        m_max = fmaxf(m_max, s->m[w][g]);
      float l_sum = 0.0f, sum = 0.0f;
      if (m_max != BONSAI_NEG_INF) // a range without keys has nothing to add
        for (int w = 0; w < PK_WARPS; ++w) {
          const float weight = expf(s->m[w][g] - m_max); // 0 for a warp without keys
          l_sum += s->l[w][g] * weight;
          sum += s->acc[w][g][i] * weight;
        }
      if (splits == 1 && a.quantize != 0) {
        s->out[t][at] = sum / l_sum;
      } else if (splits == 1) {
        pk_store(a.attn + (size_t)row * q_width + (size_t)head * group * hd + at, sum / l_sum);
      } else {
        float *const state =
            a.partials + (((size_t)row * d.n_head + head * group + g) * splits + split) * (hd + 2);
        if (i == 0) {
          pk_store(state, m_max);
          pk_store(state + 1, l_sum);
        }
        pk_store(state + 2 + i, sum);
      }
    }
    __syncthreads(); // the states are rewritten for the next token
  }
  if (splits == 1) {
    pk_quantize_attention(a, sq, head, s);
    return;
  }

  // The last range to arrive merges every range's state into the output.
  if (threadIdx.x == 0) {
    pk_fence(); // publishes this block's states before the count says so
    int *const arrivals =
        a.arrivals + ((size_t)ins.layer * PK_MAX_SEQUENCES + seq) * d.n_head_kv + head;
    ctl->go = pk_arrive(arrivals) == splits - 1;
  }
  __syncthreads();
  if (!ctl->go)
    return;
  for (int at = threadIdx.x; at < sq.n_tokens * group * hd; at += PK_THREADS) {
    const int t = at / (group * hd), g = at / hd % group, i = at % hd;
    const int row = sq.first_token + t;
    const float *const states =
        a.partials + ((size_t)row * d.n_head + head * group + g) * splits * (hd + 2);
    float m_max = BONSAI_NEG_INF;
    for (int r = 0; r < splits; ++r)
      m_max = fmaxf(m_max, states[r * (hd + 2)]);
    float l_sum = 0.0f, sum = 0.0f;
    for (int r = 0; r < splits; ++r) {
      const float *const state = states + r * (hd + 2);
      const float weight = state[0] == BONSAI_NEG_INF ? 0.0f : expf(state[0] - m_max);
      l_sum += state[1] * weight;
      sum += state[2 + i] * weight;
    }
    if (a.quantize != 0)
      s->out[t][g * hd + i] = sum / l_sum;
    else
      pk_store(a.attn + (size_t)row * q_width + (size_t)head * group * hd + g * hd + i,
               sum / l_sum);
  }
  pk_quantize_attention(a, sq, head, s);
}

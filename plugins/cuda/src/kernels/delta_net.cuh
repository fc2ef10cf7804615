// qwen35's gated DeltaNet layer between its projections (docs/models.md):
// the causal depthwise conv, the q/k L2 norms and gates, the gated delta rule
// and the gated output norm, for one sequence's run of tokens (the conv and
// the rule) or every token of the step (the rest). The same math as core's
// delta_net.cpp, which the CPU plugin and the host run.
//
// Shapes: C = conv channels (q | k | v, 2 H_k d + H_v d), K = conv width,
// d = head size, H_k q/k heads, H_v value heads. A layer's recurrent state
// is (K - 1) x C conv inputs (oldest first) then H_v states of d x d
// ([key i][value j]); a step reads one copy and writes the other.

#define DN_MAX_CONV 8 // widest conv the conv kernel keeps in registers
#define DR_WARPS 8    // value columns per delta-rule block, one per warp
#define DR_MAX_ROWS 8 // state rows per lane: heads of up to 256

__device__ __forceinline__ float dn_silu(float v) {
  return v / (1.0f + expf(-v));
}

__device__ __forceinline__ float dn_softplus(float v) {
  return v > 20.0f ? v : log1pf(expf(v));
}

// act[t][c] = SiLU(taps[c][K-1] mix[t][c] + sum_i taps[c][i] window[i][c])
// for the run's tokens in order, each token's input joining the window the
// next one reads; window_out ends as the window after the run (it may not
// be window_in). Thread per channel; grid x covers the C channels.
extern "C" __global__ void bonsai_delta_net_conv(const float *taps, const float *window_in,
                                                 float *window_out, const float *mix, float *act,
                                                 int channels, int conv_kernel, int n_tokens) {
  grid_entry();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels)
    return;
  const int K = conv_kernel;
  const float *tap = taps + (size_t)c * K;
  // Constant bounds with guards: the window stays in registers.
  float window[DN_MAX_CONV - 1];
  BONSAI_UNROLL
  for (int i = 0; i < DN_MAX_CONV - 1; ++i)
    window[i] = i + 1 < K ? window_in[(size_t)i * channels + c] : 0.0f;
  for (int t = 0; t < n_tokens; ++t) {
    const float in = mix[(size_t)t * channels + c];
    float y = tap[K - 1] * in;
    BONSAI_UNROLL
    for (int i = 0; i < DN_MAX_CONV - 1; ++i)
      if (i + 1 < K)
        y += tap[i] * window[i];
    act[(size_t)t * channels + c] = dn_silu(y);
    // The oldest input leaves, this token's joins at K - 2 (entries past it
    // are unused); ascending i reads window[i + 1] before it changes.
    BONSAI_UNROLL
    for (int i = 0; i < DN_MAX_CONV - 2; ++i)
      window[i] = i + 2 < K ? window[i + 1] : i + 2 == K ? in : window[i];
    if (K == DN_MAX_CONV)
      window[DN_MAX_CONV - 2] = in;
  }
  BONSAI_UNROLL
  for (int i = 0; i < DN_MAX_CONV - 1; ++i)
    if (i + 1 < K)
      window_out[(size_t)i * channels + c] = window[i];
}

// Per token (grid y): blocks x < 2 H_k divide one q or k head of act by
// sqrt(sum of squares + eps); block 2 H_k turns the gate logits into
// beta = sigmoid(beta) and decay = e^(softplus(decay + dt_bias) * a), in
// place. Block: head_dim rounded up to 32.
extern "C" __global__ void bonsai_delta_net_prepare(float *act, float *beta, float *decay,
                                                    const float *dt_bias, const float *a,
                                                    int n_k_heads, int n_v_heads, int head_dim,
                                                    int channels, float eps) {
  grid_entry();
  __shared__ float scratch[32];
  const int t = blockIdx.y, i = threadIdx.x;
  if ((int)blockIdx.x == 2 * n_k_heads) {
    for (int h = i; h < n_v_heads; h += blockDim.x) {
      const size_t at = (size_t)t * n_v_heads + h;
      beta[at] = 1.0f / (1.0f + expf(-beta[at]));
      decay[at] = expf(dn_softplus(decay[at] + dt_bias[h]) * a[h]);
    }
    return;
  }
  float *head = act + (size_t)t * channels + (size_t)blockIdx.x * head_dim;
  const float value = i < head_dim ? head[i] : 0.0f;
  const float scale = 1.0f / sqrtf(block_sum(value * value, scratch) + eps);
  if (i < head_dim)
    head[i] = value * scale;
}

// The gated delta rule for a run of one sequence's tokens: per token and
// value head h (q/k head h mod H_k), S' = decay S + k (beta (v - decay S^T
// k))^T and out = S'^T q / sqrt(d). Each value column j of S is its own
// recurrence, so warp w of block (h, y) owns column j = y * DR_WARPS + w,
// lane l holding rows l, l + 32, ...; a column's two sums are warp
// reductions and no block barrier is needed. Reads state_in, writes
// state_out (another copy). Block: 32 * DR_WARPS threads. Eight columns per
// block: each row's 32-byte sector of the state is read and written whole
// by one block (lanes of a warp are d floats apart).
extern "C" __global__ void bonsai_delta_rule(const float *act, const float *beta,
                                             const float *decay, const float *state_in,
                                             float *state_out, float *out, int n_k_heads,
                                             int n_v_heads, int head_dim, int n_tokens) {
  grid_entry();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int h = blockIdx.x, j = blockIdx.y * DR_WARPS + warp;
  const int d = head_dim;
  if (j >= d)
    return; // a whole warp: no reduction left without its lanes
  const int key_dim = n_k_heads * d, channels = 2 * key_dim + n_v_heads * d;
  const int kh = h % n_k_heads;
  const size_t head_state = (size_t)h * d * d;
  float s[DR_MAX_ROWS];
  for (int r = 0; r < DR_MAX_ROWS; ++r) {
    const int row = lane + 32 * r;
    s[r] = row < d ? state_in[head_state + (size_t)row * d + j] : 0.0f;
  }
  const float scale = 1.0f / sqrtf((float)d);
  for (int t = 0; t < n_tokens; ++t) {
    const float *tok = act + (size_t)t * channels;
    const float *q = tok + kh * d, *k = tok + key_dim + kh * d;
    const float v = tok[2 * key_dim + h * d + j];
    const float g = decay[(size_t)t * n_v_heads + h], b = beta[(size_t)t * n_v_heads + h];
    float kr[DR_MAX_ROWS], partial = 0.0f;
    for (int r = 0; r < DR_MAX_ROWS; ++r) {
      const int row = lane + 32 * r;
      kr[r] = row < d ? k[row] : 0.0f;
      partial += (s[r] * g) * kr[r];
    }
    const float delta = b * (v - warp_sum(partial));
    float o = 0.0f;
    for (int r = 0; r < DR_MAX_ROWS; ++r) {
      const int row = lane + 32 * r;
      s[r] = s[r] * g + kr[r] * delta;
      o += row < d ? s[r] * q[row] : 0.0f;
    }
    o = warp_sum(o);
    if (lane == 0)
      out[(size_t)t * n_v_heads * d + (size_t)h * d + j] = o * scale;
  }
  for (int r = 0; r < DR_MAX_ROWS; ++r) {
    const int row = lane + 32 * r;
    if (row < d)
      state_out[head_state + (size_t)row * d + j] = s[r];
  }
}

// o[t][h] = RMSNorm(o[t][h]) * norm * SiLU(z[t][h]) in place, per value head
// h and token t (grid (H_v, n_tokens)). Block: head_dim rounded up to 32.
extern "C" __global__ void bonsai_delta_net_gated_norm(float *o, const float *z, const float *norm,
                                                       int n_v_heads, int head_dim, float eps) {
  grid_entry();
  __shared__ float scratch[32];
  const int i = threadIdx.x;
  const size_t at = ((size_t)blockIdx.y * n_v_heads + blockIdx.x) * head_dim;
  const float value = i < head_dim ? o[at + i] : 0.0f;
  const float scale = 1.0f / sqrtf(block_sum(value * value, scratch) / (float)head_dim + eps);
  if (i < head_dim)
    o[at + i] = value * scale * norm[i] * dn_silu(z[at + i]);
}

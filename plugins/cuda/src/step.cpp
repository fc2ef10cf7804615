#include "step.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/sequence_checks.hpp"
#include "bonsai/plugin/slot_table.hpp"
#include "delta_net_layer.hpp"
#include "launch.hpp"
#include "layer_launch.hpp"
#include "persistent_step.hpp"
#include "plugin_error.hpp"
#include "step_paths.hpp"
#include "tuner.hpp"

namespace bonsai::cuda {
namespace {

// bonsai_attention_split_warps (kernels/layer.cuh): ATTN_WARPS warps,
// heads of up to ATTN_MAX_DIM dimensions, up to ATTN_MAX_GROUP query heads
// per KV head; its wide form (qwen35's heads of 256 in groups of 6) up to
// ATTN_WIDE_MAX_DIM and ATTN_WIDE_MAX_GROUP.
constexpr unsigned kAttentionWarpThreads = 128;
constexpr int kAttentionWarpMaxDim = 128;
constexpr int kAttentionWarpMaxGroup = 4;
constexpr int kAttentionWideMaxDim = 256;
constexpr int kAttentionWideMaxGroup = 8;

// The warp attention kernel (without its KV suffix) for the model's heads,
// or "" when they fit neither form (the block-per-head kernel then runs).
const char *warp_attention_kernel(const ModelDims &d) {
  const int group = d.n_head / d.n_head_kv;
  if (d.head_dim <= kAttentionWarpMaxDim && group <= kAttentionWarpMaxGroup)
    return "bonsai_attention_split_warps";
  if (d.head_dim <= kAttentionWideMaxDim && group <= kAttentionWideMaxGroup)
    return "bonsai_attention_split_warps_wide";
  return "";
}

// bonsai_attention_tc (kernels/attention_tc.cuh): 4 warps, 64 tokens per
// block, heads of up to 128 dimensions in steps of 16, key and value tiles
// of 64 rows (head_dim + 8 f16 each) in dynamic shared memory. Steps of at
// least kTcAttentionMinTokens tokens use it, as the tensor-core GEMMs do.
constexpr unsigned kTcAttentionThreads = 128;
constexpr int kTcAttentionTokens = 64;
constexpr int kTcAttentionMaxDim = 128;
constexpr int kTcAttentionMinTokens = 9;

unsigned tc_attention_shared_bytes(int head_dim) {
  return static_cast<unsigned>(4 * 64 * (head_dim + 8) * 2); // ATC_SHARED_TILES
}

// The tensor-core attention kernel for this step and model, or "".
std::string tc_attention_kernel(const Kernels &k, const ModelDims &d, int n_tokens, int kv_bytes) {
  if (!k.attention_tc() || n_tokens < kTcAttentionMinTokens || d.head_dim % 16 != 0 ||
      d.head_dim > kTcAttentionMaxDim)
    return {};
  std::string name = kv_bytes == 2 ? "bonsai_attention_tc_f16" : "bonsai_attention_tc";
  if (!k.has(name) ||
      static_cast<int>(tc_attention_shared_bytes(d.head_dim)) > k.dynamic_shared_limit(name))
    return {};
  return name;
}

// Where an attention layer's queries come from and which KV layer it uses.
struct AttentionSource {
  CUdeviceptr q_src = 0; // the query projection's rows
  int q_head_stride = 0; // floats from one query head to the next in q_src
  int cache_layer = 0;   // the layer's KV cache layer
};

// The attention of one layer for one sequence of the step, on its rows of
// q/k/v: QK-norm + RoPE + KV store into its slot, split attention, merge.
// Its {kv_length, n_tokens} is entry `index` of step_info.
void run_attention(const Context &ctx, const BoundModel &m, const AttentionSource &source,
                   int layer, const StepSequence &sequence, int index) {
  const Device &dev = *ctx.device;
  const Kernels &k = *ctx.kernels;
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  const int t0 = sequence.first_token;
  const int64_t q_width = int64_t{d.n_head} * d.head_dim;
  const int64_t kv_width = int64_t{d.n_head_kv} * d.head_dim;
  const CUdeviceptr q = row_offset(a.q.get(), t0, q_width);
  const CUdeviceptr keys = sequence.slot->keys(source.cache_layer);
  const CUdeviceptr values = sequence.slot->values(source.cache_layer);
  const CUdeviceptr info = a.step_info.get() + 2 * sizeof(int32_t) * static_cast<size_t>(index);
  const CUdeviceptr part_ml = row_offset(a.part_ml.get(), t0, int64_t{2} * d.n_head * m.n_splits);
  const CUdeviceptr part_acc = row_offset(a.part_acc.get(), t0, q_width * m.n_splits);

  LaunchShape rope;
  rope.grid_x = static_cast<unsigned>(d.n_head + d.n_head_kv);
  rope.grid_y = static_cast<unsigned>(sequence.n_tokens);
  rope.block_x = threads_for(d.head_dim);
  rope.shared_bytes = static_cast<unsigned>(d.head_dim * sizeof(float));
  // The KV kernels exist per cache element: NAME (f32) and NAME_f16.
  const char *kv_suffix = m.kv_bytes == 2 ? "_f16" : "";
  launch(dev, k.get(std::string("bonsai_qk_norm_rope") + kv_suffix), rope,
         row_offset(source.q_src, t0, int64_t{d.n_head} * source.q_head_stride),
         source.q_head_stride, q, row_offset(a.k.get(), t0, kv_width),
         row_offset(a.v.get(), t0, kv_width), m.layers[layer].q_norm, m.layers[layer].k_norm, keys,
         values, info, d.n_head, d.n_head_kv, d.head_dim, d.n_rot, m.max_context, d.rms_eps,
         m.rope_rates.get(), d.rope_magnitude);

  // A long step (prefill): its attention on tensor cores in one launch.
  if (const std::string tc = tc_attention_kernel(k, d, sequence.n_tokens, m.kv_bytes);
      !tc.empty()) {
    LaunchShape shape;
    shape.grid_x = static_cast<unsigned>(d.n_head);
    shape.grid_y =
        static_cast<unsigned>((sequence.n_tokens + kTcAttentionTokens - 1) / kTcAttentionTokens);
    shape.block_x = kTcAttentionThreads;
    shape.shared_bytes = tc_attention_shared_bytes(d.head_dim);
    launch(dev, k.get(tc), shape, q, keys, values, row_offset(a.attn.get(), t0, q_width), info,
           d.n_head, d.n_head_kv, d.head_dim, m.max_context);
    return;
  }

  LaunchShape split;
  split.grid_x = static_cast<unsigned>(d.n_head);
  split.grid_y = static_cast<unsigned>(sequence.n_tokens);
  split.grid_z = static_cast<unsigned>(m.n_splits);
  // The warp kernel (no barrier per key, one block per KV head and its
  // query heads) where the head fits its lanes and the group its registers.
  const std::string warp_kernel = warp_attention_kernel(d);
  const bool warp_attention = !warp_kernel.empty();
  split.block_x = warp_attention ? kAttentionWarpThreads : threads_for(d.head_dim);
  if (warp_attention)
    split.grid_x = static_cast<unsigned>(d.n_head_kv);
  launch(dev, k.get((warp_attention ? warp_kernel : "bonsai_attention_split") + kv_suffix), split,
         q, keys, values, part_ml, part_acc, info, d.n_head, d.n_head_kv, d.head_dim,
         m.max_context);
  LaunchShape merge = split;
  merge.grid_x = static_cast<unsigned>(d.n_head);
  merge.grid_z = 1;
  merge.block_x = threads_for(d.head_dim);
  launch(dev, k.get("bonsai_attention_merge"), merge, part_ml, part_acc,
         row_offset(a.attn.get(), t0, q_width), d.n_head, d.head_dim, m.n_splits);
}

// An attention layer's mixer: Q/K/V (RMSNorm fused where it can be),
// attention per sequence, for gated attention the sigmoid output gate, and
// the output projection added to the hidden state.
void attention_mixer(const Context &ctx, const BoundModel &m, int layer, int n,
                     const std::vector<StepSequence> &sequences) {
  const ModelDims &d = m.dims;
  const LayerBinding &L = m.layers[layer];
  const Activations &a = m.act;
  const bool gated = L.kind == MixerKind::GatedAttention;
  MatmulGroup qkv;
  qkv.weights[0] = L.wq, qkv.weights[1] = L.wk, qkv.weights[2] = L.wv;
  qkv.outs[0] = gated ? a.query_gate.get() : a.q.get(), qkv.outs[1] = a.k.get();
  qkv.outs[2] = a.v.get();
  qkv.n = 3;
  normed_matmuls(ctx, m, qkv, L.attn_norm, n);
  const AttentionSource source{qkv.outs[0], gated ? 2 * d.head_dim : d.head_dim, L.cache_index};
  for (size_t i = 0; i < sequences.size(); ++i)
    run_attention(ctx, m, source, layer, sequences[i], static_cast<int>(i));
  if (gated) {
    LaunchShape shape;
    shape.grid_x = static_cast<unsigned>(d.n_head);
    shape.grid_y = static_cast<unsigned>(n);
    shape.block_x = threads_for(d.head_dim);
    launch(*ctx.device, ctx.kernels->get("bonsai_sigmoid_gate"), shape, a.attn.get(),
           a.query_gate.get(), d.n_head, d.head_dim);
  }
  residual_matmul(ctx, m, *L.wo, a.attn.get(), a.x.get(), n);
}

} // namespace

// One decoder layer on the step's n_tokens rows (docs/architecture.md, "The model"): the
// matmuls over every sequence's tokens at once, attention (or the DeltaNet
// recurrence) per sequence. Only launches: safe inside a stream capture.
void run_layer(const Context &ctx, const BoundModel &m, int layer, int n,
               const std::vector<StepSequence> &sequences) {
  const Device &dev = *ctx.device;
  const Kernels &k = *ctx.kernels;
  const ModelDims &d = m.dims;
  const LayerBinding &L = m.layers[layer];
  const Activations &a = m.act;
  if (L.kind == MixerKind::GatedDeltaNet)
    delta_net_mixer(ctx, m, L, n, sequences);
  else
    attention_mixer(ctx, m, layer, n, sequences);

  // The MLP: RMSNorm + gate/up + SiLU as one int8 launch for up to
  // kMaxInt8GemvTokens tokens where it applies, then down added to x.
  const CUdeviceptr staging = ctx.options.int8_input_per_token ? a.int8_input.get() : 0;
  if (n > kMaxInt8GemvTokens ||
      !launch_int8_swiglu(dev, k, *L.w_gate, *L.w_up,
                          {a.x.get(), L.ffn_norm, d.rms_eps, staging, n}, a.ff.get())) {
    launch_rmsnorm(ctx, a.x.get(), L.ffn_norm, a.h.get(), n, d.n_embd, d.rms_eps);
    launch_swiglu(dev, k, *L.w_gate, *L.w_up, {a.h.get(), a.ff.get(), n, a.int8_input.get()});
  }
  residual_matmul(ctx, m, *L.w_down, a.ff.get(), a.x.get(), n);
}

// Captures embedding lookup + every layer for a single token into a graph.
// Positions come from step_info in device memory, so the graph is reused
// for every later decode step of this binding.
void capture_decode_graph(const Context &ctx, BoundModel &m) {
  const DriverApi &api = ctx.device->api();
  const CUstream stream = ctx.device->stream();
  ctx.device->check(api.cuStreamBeginCapture(stream, kStreamCaptureModeThreadLocal),
                    "cuStreamBeginCapture");
  CUgraph graph = nullptr;
  try {
    launch_get_rows(*ctx.device, *ctx.kernels, *m.token_embd, m.act.token_ids.get(), m.act.x.get(),
                    1);
    const std::vector<StepSequence> own_slot{{&m.slots.own(), 0, 1}};
    for (int l = 0; l < m.dims.n_layer; ++l)
      run_layer(ctx, m, l, 1, own_slot);
  } catch (...) {
    if (api.cuStreamEndCapture(stream, &graph) == kCudaSuccess && graph != nullptr)
      api.cuGraphDestroy(graph);
    throw;
  }
  ctx.device->check(api.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  const CUresult result = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (result != kCudaSuccess) {
    api.cuGraphDestroy(graph);
    ctx.device->check(result, "cuGraphInstantiateWithFlags");
  }
  m.decode_graph.set(graph, exec);
  ctx.log.debug(strformat("captured the decode step (%d layers) as a CUDA graph", m.dims.n_layer));
}

bool graph_step_applies(const Context &ctx, const BoundModel &m, const StepState &s) {
  // The captured graph holds slot 0's cache and step_info entry 0 (and would
  // hold one copy of a recurrent state, which alternates: not for layered models).
  return !s.persistent && !m.layered && ctx.options.use_graphs && s.n_tokens == 1 &&
         s.sequences[0].slot == &m.slots.own();
}

namespace {

// Discards any open step, checks the sequences against their slots (a
// failure leaves no step open), uploads their tokens and step_info, embeds
// the tokens and opens the step. `batch` numbers the sequences in messages.
void open_step(Context &ctx, const std::vector<SequenceRequest> &requests, const char *call,
               bool batch) {
  BoundModel &m = bound_model(ctx, call);
  ctx.step = StepState{}; // a step left open is discarded
  prepare_persistent_decode(ctx, m);
  StepState s;
  const SequenceLimits limits{ctx.max_batch, ctx.max_context, m.dims.n_vocab};
  for (size_t i = 0; i < requests.size(); ++i) {
    const SequenceRequest &request = requests[i];
    const int index = batch ? static_cast<int>(i) : -1;
    KvSlot &slot = m.slots.at(request.slot, call);
    check_sequence_request(request, slot.length, s.n_tokens, limits, call, index);
    if (!slot.state_ready())
      fail_state(strformat("%s: slot %d was cut back to %d positions, but a recurrent state "
                           "cannot be: restore a checkpoint onto it first (docs/abi.md)",
                           call, request.slot, slot.length));
    for (const StepSequence &other : s.sequences)
      if (other.slot == &slot)
        fail_invalid(strformat("%s: sequences[%d]: slot %d appears twice in one step", call, index,
                               request.slot));
    s.sequences.push_back({&slot, s.n_tokens, request.n_tokens});
    s.token_ids.insert(s.token_ids.end(), request.token_ids, request.token_ids + request.n_tokens);
    s.host_info.push_back(slot.length);
    s.host_info.push_back(request.n_tokens);
    s.n_tokens += request.n_tokens;
  }
  ctx.device->upload(m.act.token_ids.get(), s.token_ids.data(), sizeof(int32_t) * s.n_tokens);
  ctx.device->upload(m.act.step_info.get(), s.host_info.data(),
                     sizeof(int32_t) * s.host_info.size());
  // Under decode=auto, a width not seen before is tuned first, on this
  // step's inputs (tuner.hpp).
  tune_step_width(ctx, m, s);
  const DecodeChoice choice = step_decode_choice(ctx, m, s);
  s.persistent = choice.persistent;
  s.variant = choice.variant;
  s.use_graph = graph_step_applies(ctx, m, s);
  if (!s.use_graph)
    launch_get_rows(*ctx.device, *ctx.kernels, *m.token_embd, m.act.token_ids.get(), m.act.x.get(),
                    s.n_tokens);
  // The uploads read host memory that may change after we return.
  ctx.device->synchronize();
  s.open = true;
  ctx.step = std::move(s);
}

} // namespace

void step_begin(Context &ctx, const bonsai_step_desc &step) {
  open_step(ctx, {{0, step.n_tokens, step.token_ids, step.positions}}, "begin_step", false);
}

void step_begin_batch(Context &ctx, const bonsai_batch_step_desc &batch) {
  bound_model(ctx, "begin_batch");
  open_step(ctx, read_batch_requests(batch), "begin_batch", true);
}

void step_encode_layer(Context &ctx, int layer) {
  BoundModel &m = bound_model(ctx, "encode_layer");
  StepState &s = ctx.step;
  if (layer < 0 || layer >= m.dims.n_layer)
    fail_invalid(strformat("encode_layer: layer %d is outside 0..%d", layer, m.dims.n_layer - 1));
  if (!s.open)
    fail_state("encode_layer: no step is open (call begin_step first)");
  if (s.failed)
    fail_state("encode_layer: an earlier layer of this step failed; begin a new step");
  if (layer != s.next_layer)
    fail_state(strformat("encode_layer: layer %d called, expected layer %d (layers run in order "
                         "0..%d)",
                         layer, s.next_layer, m.dims.n_layer - 1));
  try {
    if (s.persistent) {
      if (layer == 0) { // one launch runs every layer; the later calls only count
        launch_persistent_step(ctx, m, s);
        s.head_in_launch = head_in_launch(*m.persistent, s.variant);
      }
    } else if (!s.use_graph) {
      run_layer(ctx, m, layer, s.n_tokens, s.sequences);
    } else if (layer == 0) {
      // The graph holds every layer: run it once, the later calls only
      // advance the layer counter.
      if (!m.decode_graph.ready())
        capture_decode_graph(ctx, m);
      ctx.device->check(
          ctx.device->api().cuGraphLaunch(m.decode_graph.exec(), ctx.device->stream()),
          "cuGraphLaunch");
    }
  } catch (...) {
    s.failed = true;
    throw;
  }
  ++s.next_layer;
}

namespace {

// The layers of the open step again, launch by launch, after its
// persistent launch stalled (the KV entries it wrote are written again).
void rerun_layers(const Context &ctx, const BoundModel &m, const StepState &s) {
  launch_get_rows(*ctx.device, *ctx.kernels, *m.token_embd, m.act.token_ids.get(), m.act.x.get(),
                  s.n_tokens);
  for (int l = 0; l < m.dims.n_layer; ++l)
    run_layer(ctx, m, l, s.n_tokens, s.sequences);
}

// After the step has synchronized: true when its persistent launch stalled
// and its layers have been queued again (the caller then repeats its work).
bool recovered_from_stall(Context &ctx, BoundModel &m) {
  StepState &s = ctx.step;
  if (!s.persistent || s.persistent_checked)
    return false;
  s.persistent_checked = true;
  if (take_persistent_stall(ctx, m).empty()) {
    take_persistent_trace(ctx, m);
    return false;
  }
  s.persistent = false;
  s.head_in_launch = false;
  rerun_layers(ctx, m, s);
  return true;
}

// The rows the persistent launch's LM head already left on the device: its
// argmax ids and logits, copied out without a launch.
void copy_launch_logits(const Context &ctx, const BoundModel &m, const bonsai_lm_head_desc &desc) {
  const Activations &a = m.act;
  const size_t first = static_cast<size_t>(desc.first_token);
  const size_t rows = static_cast<size_t>(desc.n_outputs);
  if (desc.argmax != nullptr)
    ctx.device->download(desc.argmax, a.argmax.get() + first * sizeof(int32_t),
                         sizeof(int32_t) * rows);
  if (desc.logits != nullptr) {
    const size_t row_bytes = sizeof(float) * static_cast<size_t>(m.dims.n_vocab);
    ctx.device->download(desc.logits, a.logits.get() + first * row_bytes, rows * row_bytes);
  }
  ctx.device->synchronize();
}

void project_logits(const Context &ctx, const BoundModel &m, const bonsai_lm_head_desc &desc) {
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  launch_rmsnorm(ctx, row_offset(a.x.get(), desc.first_token, d.n_embd), m.output_norm, a.h.get(),
                 desc.n_outputs, d.n_embd, d.rms_eps);
  for (int first = 0; first < desc.n_outputs; first += kLogitRows) {
    const int rows = std::min(kLogitRows, desc.n_outputs - first);
    const MatmulRows logit_rows{row_offset(a.h.get(), first, d.n_embd), a.logits.get(), rows,
                                a.int8_input.get()};
    launch_matmul(*ctx.device, *ctx.kernels, *m.lm_head, logit_rows, false);
    if (desc.argmax != nullptr) {
      LaunchShape shape;
      shape.grid_x = static_cast<unsigned>(rows);
      shape.block_x = 256; // the kernel's shared arrays hold 256 entries
      launch(*ctx.device, ctx.kernels->get("bonsai_argmax"), shape, a.logits.get(), d.n_vocab,
             a.argmax.get());
      ctx.device->download(desc.argmax + first, a.argmax.get(), sizeof(int32_t) * rows);
    }
    if (desc.logits != nullptr)
      ctx.device->download(desc.logits + static_cast<size_t>(first) * d.n_vocab, a.logits.get(),
                           sizeof(float) * static_cast<size_t>(rows) * d.n_vocab);
  }
  ctx.device->synchronize();
}

// The final norm of the asked tokens, copied to the host: from the last
// layer's residual in act.x, where every path (a persistent launch too)
// leaves it.
void copy_hidden_states(const Context &ctx, const BoundModel &m,
                        const bonsai_hidden_states_desc &desc) {
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  launch_rmsnorm(ctx, row_offset(a.x.get(), desc.first_token, d.n_embd), m.output_norm, a.h.get(),
                 desc.n_outputs, d.n_embd, d.rms_eps);
  ctx.device->download(desc.hidden, a.h.get(),
                       sizeof(float) * static_cast<size_t>(desc.n_outputs) * d.n_embd);
  ctx.device->synchronize();
}

// The bound model of an open step whose layers have all run (what reads its
// last states needs); BAD_STATE naming `call` otherwise.
BoundModel &after_last_layer(Context &ctx, const char *call) {
  BoundModel &m = bound_model(ctx, call);
  const StepState &s = ctx.step;
  if (!s.open || s.failed || s.next_layer != m.dims.n_layer)
    fail_state(strformat("%s: the step's %d layers have not all run", call, m.dims.n_layer));
  return m;
}

} // namespace

void step_hidden_states(Context &ctx, const bonsai_hidden_states_desc &desc) {
  BoundModel &m = after_last_layer(ctx, "hidden_states");
  check_hidden_states_desc(desc, ctx.step.n_tokens);
  copy_hidden_states(ctx, m, desc);
  if (recovered_from_stall(ctx, m))
    copy_hidden_states(ctx, m, desc);
}

void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc) {
  BoundModel &m = after_last_layer(ctx, "lm_head");
  check_lm_head_desc(desc, ctx.step.n_tokens);
  if (ctx.step.head_in_launch)
    copy_launch_logits(ctx, m, desc);
  else
    project_logits(ctx, m, desc);
  if (recovered_from_stall(ctx, m)) // the launch stalled: its rows are worked out again
    project_logits(ctx, m, desc);
}

void step_end(Context &ctx) {
  BoundModel &m = bound_model(ctx, "end_step");
  if (!ctx.step.open)
    fail_state("end_step: no step is open");
  if (ctx.step.failed || ctx.step.next_layer != m.dims.n_layer)
    fail_state("end_step: the step's layers have not all run");
  ctx.device->synchronize(); // surface any asynchronous kernel error here
  if (recovered_from_stall(ctx, m))
    ctx.device->synchronize();
  for (const StepSequence &sequence : ctx.step.sequences) {
    KvSlot &slot = *sequence.slot;
    slot.length += sequence.n_tokens;
    RecurrentState &state = slot.recurrent;
    if (!state.empty()) { // the copy this step wrote becomes the state
      state.current = 1 - state.current;
      state.position = slot.length;
    }
  }
  ctx.step = StepState{};
}

} // namespace bonsai::cuda

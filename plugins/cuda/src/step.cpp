#include "step.hpp"

#include <algorithm>

#include "bonsai/plugin/abi_checks.hpp"
#include "launch.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

constexpr unsigned kNormThreads = 256;
// bonsai_attention_split_warps (kernels/layer.cuh): ATTN_WARPS warps,
// heads of up to ATTN_MAX_DIM dimensions.
constexpr unsigned kAttentionWarpThreads = 128;
constexpr int kAttentionWarpMaxDim = 128;

BoundModel &bound(Context &ctx, const char *what) {
  if (!ctx.model)
    fail_state(strformat("%s: no model is bound (call bind_model first)", what));
  return *ctx.model;
}

CUdeviceptr row_offset(CUdeviceptr base, int row, int64_t width) {
  return base + static_cast<CUdeviceptr>(row) * static_cast<CUdeviceptr>(width) * sizeof(float);
}

void launch_rmsnorm(const Context &ctx, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr out,
                    int n_tokens, int n, float eps) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(n_tokens);
  shape.block_x = kNormThreads;
  launch(*ctx.device, ctx.kernels->get("bonsai_rmsnorm"), shape, x, weight, out, n, eps);
}

// One decoder layer on the step's n_tokens rows (docs/architecture.md, "The model"). Only
// launches: safe inside a stream capture.
void run_layer(const Context &ctx, const BoundModel &m, int layer, int n) {
  const Device &dev = *ctx.device;
  const Kernels &k = *ctx.kernels;
  const ModelDims &d = m.dims;
  const LayerBinding &L = m.layers[layer];
  const Activations &a = m.act;

  // A single token runs RMSNorm + Q/K/V as one int8 launch where it can.
  MatmulGroup qkv;
  qkv.weights[0] = L.wq, qkv.weights[1] = L.wk, qkv.weights[2] = L.wv;
  qkv.outs[0] = a.q.get(), qkv.outs[1] = a.k.get(), qkv.outs[2] = a.v.get();
  qkv.n = 3;
  if (n != 1 || !launch_int8_group(dev, k, qkv, {a.x.get(), L.attn_norm, d.rms_eps}, false)) {
    launch_rmsnorm(ctx, a.x.get(), L.attn_norm, a.h.get(), n, d.n_embd, d.rms_eps);
    launch_matmul(dev, k, *L.wq, a.h.get(), a.q.get(), n, false);
    launch_matmul(dev, k, *L.wk, a.h.get(), a.k.get(), n, false);
    launch_matmul(dev, k, *L.wv, a.h.get(), a.v.get(), n, false);
  }

  LaunchShape rope;
  rope.grid_x = static_cast<unsigned>(d.n_head + d.n_head_kv);
  rope.grid_y = static_cast<unsigned>(n);
  rope.block_x = threads_for(d.head_dim);
  rope.shared_bytes = static_cast<unsigned>(d.head_dim * sizeof(float));
  launch(dev, k.get("bonsai_qk_norm_rope"), rope, a.q.get(), a.k.get(), a.v.get(), L.q_norm,
         L.k_norm, L.k_cache, L.v_cache, a.step_info.get(), d.n_head, d.n_head_kv, d.head_dim,
         m.max_context, d.rms_eps, m.rope_rates.get(), d.rope_magnitude);

  LaunchShape split;
  split.grid_x = static_cast<unsigned>(d.n_head);
  split.grid_y = static_cast<unsigned>(n);
  split.grid_z = static_cast<unsigned>(m.n_splits);
  // The warp kernel (no barrier per key) where the head fits its lanes.
  const bool warp_attention = d.head_dim <= kAttentionWarpMaxDim;
  split.block_x = warp_attention ? kAttentionWarpThreads : threads_for(d.head_dim);
  launch(dev, k.get(warp_attention ? "bonsai_attention_split_warps" : "bonsai_attention_split"),
         split, a.q.get(), L.k_cache, L.v_cache, a.part_ml.get(), a.part_acc.get(),
         a.step_info.get(), d.n_head, d.n_head_kv, d.head_dim, m.max_context, m.split_chunk);
  LaunchShape merge = split;
  merge.grid_z = 1;
  merge.block_x = threads_for(d.head_dim);
  launch(dev, k.get("bonsai_attention_merge"), merge, a.part_ml.get(), a.part_acc.get(),
         a.attn.get(), d.n_head, d.head_dim, m.n_splits);

  launch_matmul(dev, k, *L.wo, a.attn.get(), a.x.get(), n, true);
  if (n != 1 || !launch_int8_swiglu(dev, k, *L.w_gate, *L.w_up, {a.x.get(), L.ffn_norm, d.rms_eps},
                                    a.ff.get())) {
    launch_rmsnorm(ctx, a.x.get(), L.ffn_norm, a.h.get(), n, d.n_embd, d.rms_eps);
    launch_swiglu(dev, k, *L.w_gate, *L.w_up, a.h.get(), a.ff.get(), n);
  }
  launch_matmul(dev, k, *L.w_down, a.ff.get(), a.x.get(), n, true);
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
    for (int l = 0; l < m.dims.n_layer; ++l)
      run_layer(ctx, m, l, 1);
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

} // namespace

void step_begin(Context &ctx, const bonsai_step_desc &step) {
  BoundModel &m = bound(ctx, "begin_step");
  ctx.step = StepState{}; // a step left open is discarded
  const int n = step.n_tokens;
  if (n < 1 || n > ctx.max_batch)
    fail_invalid(
        strformat("begin_step: n_tokens is %d; it must be in 1..max_batch (%d)", n, ctx.max_batch));
  if (m.kv_length + n > ctx.max_context)
    fail_invalid(strformat("begin_step: %d tokens after %d cached positions exceed max_context %d",
                           n, m.kv_length, ctx.max_context));
  if (step.token_ids == nullptr || step.positions == nullptr)
    fail_invalid("begin_step: token_ids and positions must not be NULL");
  for (int i = 0; i < n; ++i) {
    if (step.token_ids[i] < 0 || step.token_ids[i] >= m.dims.n_vocab)
      fail_invalid(strformat("begin_step: token_ids[%d] = %d is outside [0, %d)", i,
                             step.token_ids[i], m.dims.n_vocab));
    if (step.positions[i] != m.kv_length + i)
      fail_invalid(strformat("begin_step: positions[%d] is %d; ABI 1.0 needs kv_length + i = %d", i,
                             step.positions[i], m.kv_length + i));
  }
  StepState s;
  s.n_tokens = n;
  s.use_graph = ctx.options.use_graphs && n == 1;
  s.host_info[0] = m.kv_length;
  s.host_info[1] = n;
  ctx.device->upload(m.act.token_ids.get(), step.token_ids, sizeof(int32_t) * n);
  ctx.device->upload(m.act.step_info.get(), s.host_info, sizeof s.host_info);
  if (!s.use_graph)
    launch_get_rows(*ctx.device, *ctx.kernels, *m.token_embd, m.act.token_ids.get(), m.act.x.get(),
                    n);
  // The uploads read host memory that may change after we return.
  ctx.device->synchronize();
  s.open = true;
  ctx.step = s;
}

void step_encode_layer(Context &ctx, int layer) {
  BoundModel &m = bound(ctx, "encode_layer");
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
    if (!s.use_graph) {
      run_layer(ctx, m, layer, s.n_tokens);
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

void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc) {
  BoundModel &m = bound(ctx, "lm_head");
  const StepState &s = ctx.step;
  if (!s.open || s.failed || s.next_layer != m.dims.n_layer)
    fail_state(strformat("lm_head: the step's %d layers have not all run", m.dims.n_layer));
  check_lm_head_desc(desc, s.n_tokens);
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  launch_rmsnorm(ctx, row_offset(a.x.get(), desc.first_token, d.n_embd), m.output_norm, a.h.get(),
                 desc.n_outputs, d.n_embd, d.rms_eps);
  for (int first = 0; first < desc.n_outputs; first += kLogitRows) {
    const int rows = std::min(kLogitRows, desc.n_outputs - first);
    launch_matmul(*ctx.device, *ctx.kernels, *m.lm_head, row_offset(a.h.get(), first, d.n_embd),
                  a.logits.get(), rows, false);
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

void step_end(Context &ctx) {
  BoundModel &m = bound(ctx, "end_step");
  if (!ctx.step.open)
    fail_state("end_step: no step is open");
  if (ctx.step.failed || ctx.step.next_layer != m.dims.n_layer)
    fail_state("end_step: the step's layers have not all run");
  ctx.device->synchronize(); // surface any asynchronous kernel error here
  m.kv_length += ctx.step.n_tokens;
  ctx.step = StepState{};
}

void kv_reset(Context &ctx) {
  bound(ctx, "kv_reset").kv_length = 0;
  ctx.step = StepState{};
}

void kv_truncate(Context &ctx, int n_keep) {
  BoundModel &m = bound(ctx, "kv_truncate");
  if (n_keep < 0 || n_keep > m.kv_length)
    fail_invalid(
        strformat("kv_truncate: n_keep %d is outside 0..%d (the KV length)", n_keep, m.kv_length));
  m.kv_length = n_keep;
  ctx.step = StepState{};
}

int kv_length(const Context &ctx) {
  if (!ctx.model)
    fail_state("kv_length: no model is bound (call bind_model first)");
  return ctx.model->kv_length;
}

} // namespace bonsai::cuda

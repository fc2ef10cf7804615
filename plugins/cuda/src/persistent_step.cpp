#include "persistent_step.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "kernel_sources.hpp"
#include "launch.hpp"
#include "plugin_error.hpp"
#include "weight_repack.hpp"

namespace bonsai::cuda {

PinnedStatus::PinnedStatus(const Device &device) : device_(device) {
  void *memory = nullptr;
  if (device.api().cuMemAllocHost(&memory, sizeof(PersistentStatus)) == kCudaSuccess) {
    status_ = static_cast<PersistentStatus *>(memory);
    pinned_ = true;
  } else {
    status_ = new PersistentStatus;
  }
  *status_ = PersistentStatus{};
}

PinnedStatus::~PinnedStatus() {
  if (!pinned_)
    delete status_;
  else if (!device_.abandoned())
    device_.api().cuMemFreeHost(status_);
}

namespace {

constexpr int kBlockThreads = 256; // PK_THREADS

// Host images of the structs of kernels/persistent_args.cuh.
struct LayerArg {
  CUdeviceptr wq, wk, wv, wo, wg, wu, wd;
  CUdeviceptr attn_norm, q_norm, k_norm, ffn_norm;
};
static_assert(sizeof(LayerArg) == 88, "must match PkLayer in kernels/persistent_args.cuh");
struct SequenceArg {
  int32_t kv_length, n_tokens, first_token, reserved;
  CUdeviceptr cache;
};
static_assert(sizeof(SequenceArg) == 24, "must match PkSequence in kernels/persistent_args.cuh");
struct DimsArg {
  int32_t n_embd, n_head, n_head_kv, head_dim, n_ff, max_ctx;
  float eps, rope_magnitude;
};
struct PersistentArgs {
  CUdeviceptr instrs, layers, counters, status;
  CUdeviceptr x, q, k, v, attn, ff;
  CUdeviceptr rope_rates;
  uint64_t layer_bytes;
  int64_t deadline_ns;
  int32_t n_instrs, n_tokens, n_sequences, weights_offset;
  DimsArg dims;
  SequenceArg sequences[kPersistentMaxSequences];
  CUdeviceptr partials, arrivals;
  int32_t attention_splits, unit_rows;
  CUdeviceptr trace; // PK_MARKS times per instruction, or 0
  CUdeviceptr q8[kPersistentStages], q8_sumsq[kPersistentStages], group_rows;
  int32_t quantize, q8_groups, n_layer, mma;
  CUdeviceptr head, output_norm, logits, head_best, argmax;
  int32_t n_vocab, prefetch;
  int32_t stream_slots, slot_bytes;
  int32_t head_ready_base, reserved3;
};
static_assert(sizeof(PersistentArgs) == 544,
              "must match PersistentArgs in kernels/persistent_args.cuh");

// Dynamic shared bytes before the weight buffer in a step of n_tokens
// tokens (persistent_work_bytes), for inputs up to max_cols wide.
unsigned work_bytes(int max_cols, int n_tokens, bool mma) {
  return persistent_work_bytes(int8_staging_bytes(max_cols), n_tokens, mma);
}

// Bytes of a 128-weight block with its f16 scale in the planar layout.
int block_bytes(unsigned ggml_type) {
  return planar_code_bytes(ggml_type) + 2;
}

// The weight buffer left beside the work area of steps of n_tokens tokens,
// a multiple of 16.
int weight_buffer(const Kernels &kernels, const std::string &kernel, int max_cols, int n_tokens,
                  bool mma) {
  return persistent_weight_buffer_bytes(kernels.dynamic_shared_limit(kernel),
                                        int8_staging_bytes(max_cols), n_tokens, mma);
}

int widest_input(const ModelDims &d) {
  return std::max({d.n_embd, d.n_head * d.head_dim, d.n_ff});
}

// The plan's shape of a model (one sequence, no weight buffer yet).
PersistentShape plan_shape(const BoundModel &m, unsigned ggml_type) {
  const ModelDims &d = m.dims;
  PersistentShape shape{d.n_layer, d.n_embd, d.n_head, d.n_head_kv, d.head_dim, d.n_ff, 1, 1};
  shape.block_bytes = block_bytes(ggml_type);
  return shape;
}

// Why the model cannot run on the persistent kernel, or "".
std::string unsupported_reason(const Kernels &kernels, const BoundModel &m, std::string *kernel) {
  const ModelDims &d = m.dims;
  if (m.layered)
    return "its layers are qwen35's kinds, which the persistent kernel does not run";
  if (!kernels.persistent())
    return "its kernels were not built (int8_gemv=off, or a device before sm_70)";
  const unsigned type = m.layers[0].wq->layout.type;
  for (const LayerBinding &L : m.layers)
    for (const Weight *w : {L.wq, L.wk, L.wv, L.wo, L.w_gate, L.w_up, L.w_down})
      if (w->layout.type != type)
        return "its layer matrices are not all of one type";
  *kernel = persistent_decode_name(type, m.kv_bytes == 2, kernels.persistent_held());
  if (kernel->empty())
    return "its matrices are not Q1_0 or Q2_0";
  const int q_width = d.n_head * d.head_dim;
  if (d.n_embd % 128 != 0 || q_width % 128 != 0 || d.n_ff % 128 != 0)
    return "a matrix width is not a multiple of 128";
  if (d.head_dim > kPersistentMaxHeadDim || d.head_dim % 2 != 0)
    return strformat("head dimension %d (it takes even ones up to %d)", d.head_dim,
                     kPersistentMaxHeadDim);
  if (d.n_head % d.n_head_kv != 0 || d.n_head / d.n_head_kv > kPersistentMaxGroup)
    return strformat("%d query heads per KV head (it takes up to %d)", d.n_head / d.n_head_kv,
                     kPersistentMaxGroup);
  // The weight buffer's copies move whole 16-byte chunks of scales.
  if ((d.n_head_kv * d.head_dim) % 16 != 0)
    return "the K/V width is not a multiple of 16";
  if (!kernels.has(*kernel))
    return "its kernel was not built";
  const int largest_tile = persistent_largest_tile_bytes(plan_shape(m, type));
  if (weight_buffer(kernels, *kernel, widest_input(d), 1, false) < largest_tile)
    return strformat("a block needs %u bytes of shared memory",
                     work_bytes(widest_input(d), 1, false) + static_cast<unsigned>(largest_tile));
  return {};
}

// Why persistent_quantize=producer cannot apply to the model, or "".
std::string producer_quantize_reason(const ModelDims &d) {
  if ((d.n_head / d.n_head_kv * d.head_dim) % 128 != 0)
    return "a KV head's query columns are not whole groups of 128";
  if (widest_input(d) / 128 > kPersistentMaxQ8Groups)
    return strformat("inputs wider than %d", kPersistentMaxQ8Groups * 128);
  return {};
}

// Lays out persistent_quantize=producer's buffers: each matmul stage's
// staged rows for the most tokens, the normed stages' sums of squares, and
// the group row counts (after the other counts in `control`, which the
// launch zeroes together).
void prepare_producer_quantize(const Device &device, const ModelDims &d, PersistentDecode &p) {
  p.producer_quantize = true;
  p.q8_groups = widest_input(d) / 128;
  size_t bytes = 0;
  for (PersistentStage stage : {PersistentStage::qkv, PersistentStage::output,
                                PersistentStage::ffn_up, PersistentStage::ffn_down}) {
    p.staged_offsets[static_cast<int>(stage)] = bytes;
    bytes += static_cast<size_t>(p.max_tokens *
                                 int8_staging_bytes(persistent_stage_input_width(p.shape, stage)));
  }
  for (PersistentStage stage : {PersistentStage::qkv, PersistentStage::ffn_up}) {
    p.sums_offsets[static_cast<int>(stage)] = bytes;
    bytes += (size_t(p.max_tokens) * p.q8_groups * sizeof(float) + 15) / 16 * 16;
  }
  p.staged = DeviceBuffer(device, bytes, "the persistent decode's producer-quantized inputs");
}

// Why persistent_head cannot apply (the LM head and argmax in the launch), or "".
std::string head_reason(const BoundModel &m) {
  if (m.lm_head->layout.type != m.layers[0].wq->layout.type)
    return "the LM head's type is not the layers'";
  if (m.dims.n_vocab % kPersistentTileRows != 0)
    return strformat("a vocabulary of %d rows is not whole tiles of %d", m.dims.n_vocab,
                     kPersistentTileRows);
  return {};
}

// The most tokens a step may have: 8, or fewer where their staged inputs
// would leave no room for the weights of one tile of every stage.
int most_tokens(const Kernels &kernels, const std::string &kernel, const PersistentShape &shape,
                int max_cols, bool mma) {
  int n = kPersistentMaxTokens;
  while (n > 1 &&
         weight_buffer(kernels, kernel, max_cols, n, mma) < persistent_largest_tile_bytes(shape))
    --n;
  return n;
}

// Why persistent_matmul=mma cannot apply, or "".
std::string mma_reason(const Context &ctx, const std::string &kernel, const PersistentShape &shape,
                       int max_cols) {
  if (ctx.kernels->compute_major() < 8)
    return strformat("the int8 MMA needs compute capability 8.0, this device has %d.x",
                     ctx.kernels->compute_major());
  if (weight_buffer(*ctx.kernels, kernel, max_cols, 1, true) < persistent_largest_tile_bytes(shape))
    return "its sums would leave no room for a tile's weights";
  return {};
}

// Where single tokens take the persistent kernel under decode=auto: from the
// first position for every width. On an H200 at 764dc7b (2026-11-28, the
// `paths` section of gpu-check.sh, tg128 medians) it ran faster than the
// graph path at every shape and context it measured: 1.7B Q1_0 746.7 t/s
// against 630.2 (542.5 against 371.2 at 4,096 positions), 8B Q1_0 435.2
// against 335.6 (318.0 against 206.8). (Before that build's one-token
// plans, 1.7B was slower there at short contexts, and auto started it at
// 512 positions.) persistent_single_from=N still sets another length.
int single_token_context(const ContextOptions &options) {
  if (options.decode == DecodeMode::persistent)
    return 0;
  return options.persistent_single_from >= 0 ? options.persistent_single_from : 0;
}

int multiprocessors(const Device &device) {
  int count = 0;
  device.check(device.api().cuDeviceGetAttribute(&count, kAttrMultiprocessorCount, device.device()),
               "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  return std::max(count, 1);
}

// The key ranges of `step`'s attention: by its longest sequence's cached
// keys where persistent_keys_per_range is set (the ranges divide only
// those; the step's own keys go to the last range).
int step_attention_splits(const PersistentDecode &p, const StepState &step) {
  int longest = 0;
  for (const StepSequence &s : step.sequences)
    longest = std::max(longest, s.slot->length);
  return persistent_step_attention_splits(p.shape.blocks, static_cast<int>(step.sequences.size()),
                                          p.shape.n_head_kv, longest, p.keys_per_range);
}

// The plan of steps as `key` says (sequences, tokens, key ranges, the LM
// head in it or not), built on first use.
const PersistentPlanBuffer &plan_for(const Context &ctx, const BoundModel &m,
                                     const PersistentPlanKey &key) {
  PersistentDecode &p = *m.persistent;
  auto found = p.plans.find(key);
  if (found != p.plans.end())
    return found->second;
  PersistentShape shape = p.shape;
  shape.n_sequences = key.sequences;
  shape.attention_splits = key.splits;
  shape.n_vocab = key.head ? m.dims.n_vocab : 0;
  shape.balanced = key.balanced;
  shape.unit_rows = key.balanced ? persistent_balanced_unit_rows(shape) : kPersistentTileRows;
  shape.weight_buffer_bytes =
      weight_buffer(*ctx.kernels, p.kernel, widest_input(m.dims), key.tokens, p.mma);
  // persistent_stream: the ranges are cut for one slot of the buffer.
  int slots = key.stream;
  if (slots > 1 &&
      shape.weight_buffer_bytes / slots / 16 * 16 < persistent_largest_tile_bytes(shape)) {
    ctx.log.info(strformat("persistent_stream=%d does not fit steps of %d token(s) (a slot would "
                           "hold no tile): one weight buffer",
                           slots, key.tokens));
    slots = 1;
  }
  if (slots > 1)
    shape.weight_buffer_bytes = shape.weight_buffer_bytes / slots / 16 * 16;
  // persistent_qkv=fused, where every share of a layer fits the grid at once.
  shape.fused_qkv_attention = key.fused && persistent_fused_applies(shape);
  if (key.fused && !shape.fused_qkv_attention)
    ctx.log.info(strformat("persistent_qkv=fused does not apply to steps of %d sequence(s), %d "
                           "token(s) and %d key range(s) (more shares than blocks, or a share "
                           "past the weight buffer): Q/K/V apart",
                           key.sequences, key.tokens, key.splits));
  PersistentPlanBuffer plan;
  plan.fused = shape.fused_qkv_attention;
  plan.stream_slots = slots;
  plan.slot_bytes = slots > 1 ? shape.weight_buffer_bytes : 0;
  plan.host = build_persistent_plan(shape);
  plan.weight_buffer_bytes = shape.weight_buffer_bytes * slots;
  plan.unit_rows = shape.unit_rows;
  const std::string balanced =
      key.balanced ? strformat(", balanced shares of %d-row units", shape.unit_rows) : "";
  const std::string streamed =
      (slots > 1 ? strformat(" in %d slots, the next %d instructions' weights streamed ahead",
                             slots, slots - 1)
                 : std::string()) +
      (plan.fused ? ", Q/K/V and attention in one stage" : "");
  ctx.log.debug(strformat("decode=persistent: a plan for %d sequence(s), %d token(s) and %d key "
                          "range(s) a step%s%s: %zu instructions, a %d-byte weight buffer%s",
                          key.sequences, key.tokens, key.splits,
                          key.head ? " with the LM head" : "", balanced.c_str(), plan.host.size(),
                          plan.weight_buffer_bytes, streamed.c_str()));
  const Device &device = *ctx.device;
  const size_t bytes = plan.host.size() * sizeof(PersistentInstr);
  plan.device = DeviceBuffer(device, bytes, "the persistent decode instruction list");
  device.upload(plan.device.get(), plan.host.data(), bytes);
  device.synchronize(); // the host vector moves below
  return p.plans.emplace(key, std::move(plan)).first->second;
}

} // namespace

void prepare_persistent_decode(Context &ctx, BoundModel &m) {
  if (!ctx.kernels->persistent_wanted() || m.persistent || m.persistent_off)
    return;
  std::string kernel;
  if (const std::string why = unsupported_reason(*ctx.kernels, m, &kernel); !why.empty()) {
    ctx.log.info("the persistent decode kernel does not apply to this model (" + why +
                 "): decoding launch by launch");
    m.persistent_off = true;
    return;
  }
  const Device &device = *ctx.device;
  const ModelDims &d = m.dims;
  auto p = std::make_unique<PersistentDecode>(device);
  p->kernel = kernel;
  p->single_from = single_token_context(ctx.options);
  p->shape = plan_shape(m, m.layers[0].wq->layout.type);
  p->shape.blocks = multiprocessors(device);
  if (ctx.options.persistent_mma) {
    const std::string why = mma_reason(ctx, kernel, p->shape, widest_input(d));
    p->mma = why.empty();
    if (!p->mma)
      ctx.log.info("persistent_matmul=mma does not apply (" + why + "): multiplying with dp4a");
  }
  p->max_tokens = most_tokens(*ctx.kernels, kernel, p->shape, widest_input(d), p->mma);
  // The head's buffers whenever it can be in the launch: the tuner tries it
  // either way, whatever persistent_head says.
  if (const std::string why = head_reason(m); why.empty()) {
    p->head_available = true;
    // A range holds a tile at least: at most one range per tile, and with
    // balanced units (whole rounds of blocks) two rounds more.
    p->head_best = DeviceBuffer(device,
                                size_t(d.n_vocab / kPersistentTileRows + 2 * p->shape.blocks) *
                                    kPersistentMaxTokens * sizeof(uint64_t),
                                "the persistent LM head's best rows");
  } else if (ctx.options.persistent_head) {
    ctx.log.info("persistent_head does not apply (" + why + "): the LM head runs after the launch");
  }
  p->deadline_ns = static_cast<long long>(ctx.options.persistent_deadline_ms) * 1000000;
  p->keys_per_range = ctx.options.persistent_keys_per_range;
  std::vector<LayerArg> layers;
  for (const LayerBinding &L : m.layers)
    layers.push_back({L.wq->data.get(), L.wk->data.get(), L.wv->data.get(), L.wo->data.get(),
                      L.w_gate->data.get(), L.w_up->data.get(), L.w_down->data.get(), L.attn_norm,
                      L.q_norm, L.k_norm, L.ffn_norm});
  p->layers = DeviceBuffer(device, layers.size() * sizeof(LayerArg), "the persistent layer table");
  device.upload(p->layers.get(), layers.data(), layers.size() * sizeof(LayerArg));
  // The stage counters (the layers', then the LM head's), then the attention
  // ranges' arrival counts.
  p->arrivals_offset = size_t(persistent_counter_count(d.n_layer)) * sizeof(int32_t);
  p->group_rows_offset = p->arrivals_offset + size_t{kPersistentMaxSequences} * d.n_layer *
                                                  d.n_head_kv * sizeof(int32_t);
  if (ctx.options.persistent_producer_quantize) {
    if (const std::string why = producer_quantize_reason(d); why.empty())
      prepare_producer_quantize(device, d, *p);
    else
      ctx.log.info("persistent_quantize=producer does not apply to this model (" + why +
                   "): each instruction quantizes its inputs");
  }
  const size_t group_rows =
      p->producer_quantize ? size_t{kPersistentStages} * d.n_layer * p->q8_groups : 0;
  // persistent_qkv=fused: a ready count per layer and KV head, after them.
  p->head_ready_offset = p->group_rows_offset + group_rows * sizeof(int32_t);
  p->counter_bytes =
      (p->head_ready_offset + size_t(d.n_layer) * d.n_head_kv * sizeof(int32_t) + 15) / 16 * 16;
  // The split attention's states: the most rows a step has, each query
  // head, as many key ranges as one sequence gets (the most), m, l and sums.
  const int most_splits = persistent_attention_splits(p->shape.blocks, 1, d.n_head_kv);
  p->partials = DeviceBuffer(
      device, size_t(p->max_tokens) * d.n_head * most_splits * (d.head_dim + 2) * sizeof(float),
      "the persistent decode attention states");
  p->control = DeviceBuffer(device, p->counter_bytes + sizeof(PersistentStatus),
                            "the persistent decode counters");
  device.synchronize(); // `layers` goes out of scope
  ctx.log.info(strformat(
      "decode=persistent: %s, %d blocks of %d threads, steps of up to %d "
      "tokens, attention in up to %d key ranges, a weight buffer of %d bytes "
      "(%d at one token; %u bytes of shared memory per block at most), "
      "inputs quantized by their %s, steps of several tokens multiplied "
      "with %s, single tokens with the input records in %s, the LM head %s, "
      "%s, %d ms wait deadline",
      kernel.c_str(), p->shape.blocks, kBlockThreads, p->max_tokens, most_splits,
      weight_buffer(*ctx.kernels, kernel, widest_input(d), p->max_tokens, p->mma),
      weight_buffer(*ctx.kernels, kernel, widest_input(d), 1, p->mma),
      static_cast<unsigned>(ctx.kernels->dynamic_shared_limit(kernel)),
      p->producer_quantize ? "producers" : "readers", p->mma ? "the int8 MMA" : "dp4a",
      ctx.kernels->persistent_held() ? "registers" : "shared memory",
      p->head_available && ctx.options.persistent_head ? "and argmax in the launch" : "after it",
      ctx.options.persistent_prefetch ? "the next instruction's weights prefetched to L2"
                                      : "no L2 prefetch",
      ctx.options.persistent_deadline_ms));
  m.persistent = std::move(p);
}

bool persistent_step_fits(const BoundModel &m, const StepState &step) {
  return m.persistent != nullptr && step.n_tokens <= m.persistent->max_tokens &&
         static_cast<int>(step.sequences.size()) <= kPersistentMaxSequences;
}

DecodeChoice fixed_decode_choice(const Context &ctx, const BoundModel &m, const StepState &step) {
  DecodeChoice choice;
  if (!persistent_step_fits(m, step))
    return choice;
  const bool auto_takes =
      ctx.options.decode == DecodeMode::automatic && ctx.kernels->compute_major() >= 9 &&
      (step.n_tokens > 1 || step.sequences[0].slot->length >= m.persistent->single_from);
  choice.persistent = ctx.options.decode == DecodeMode::persistent || auto_takes;
  if (choice.persistent)
    choice.variant = {ctx.options.persistent_head && m.persistent->head_available,
                      ctx.options.persistent_prefetch, ctx.options.tuning.balanced_shares,
                      ctx.options.tuning.stream_slots, ctx.options.tuning.fused_qkv_attention};
  return choice;
}

DecodeChoice step_decode_choice(const Context &ctx, const BoundModel &m, const StepState &step) {
  if (ctx.options.decode == DecodeMode::automatic && persistent_step_fits(m, step))
    if (const auto &tuned = m.persistent->tuned[static_cast<size_t>(step.n_tokens)])
      return *tuned;
  return fixed_decode_choice(ctx, m, step);
}

bool stream_fits(const Context &ctx, const BoundModel &m, int n_tokens, int slots) {
  const PersistentDecode &p = *m.persistent;
  return weight_buffer(*ctx.kernels, p.kernel, widest_input(m.dims), n_tokens, p.mma) / slots / 16 *
             16 >=
         persistent_largest_tile_bytes(p.shape);
}

bool fused_fits(const Context &ctx, const BoundModel &m, const StepState &step) {
  const PersistentDecode &p = *m.persistent;
  PersistentShape shape = p.shape;
  shape.n_sequences = static_cast<int>(step.sequences.size());
  shape.attention_splits = step_attention_splits(p, step);
  shape.weight_buffer_bytes =
      weight_buffer(*ctx.kernels, p.kernel, widest_input(m.dims), step.n_tokens, p.mma);
  return persistent_fused_applies(shape);
}

bool head_in_launch(const PersistentDecode &p, const PersistentVariant &variant) {
  return p.head_available && variant.head;
}

void launch_persistent_step(Context &ctx, BoundModel &m, const StepState &step) {
  const Device &device = *ctx.device;
  PersistentDecode &p = *m.persistent;
  const int n_sequences = static_cast<int>(step.sequences.size());
  const int splits = step_attention_splits(p, step);
  const PersistentPlanKey key{n_sequences,
                              step.n_tokens,
                              splits,
                              head_in_launch(p, step.variant),
                              step.variant.balanced,
                              std::max(1, step.variant.stream),
                              step.variant.fused};
  const PersistentPlanBuffer &plan = plan_for(ctx, m, key);
  p.last_plan = key;
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  PersistentArgs args{};
  args.instrs = plan.device.get();
  args.layers = p.layers.get();
  args.counters = p.control.get();
  args.status = p.control.get() + p.counter_bytes;
  args.x = a.x.get(), args.q = a.q.get(), args.k = a.k.get(), args.v = a.v.get();
  args.attn = a.attn.get(), args.ff = a.ff.get();
  args.rope_rates = m.rope_rates.get();
  args.layer_bytes = step.sequences[0].slot->layer_bytes;
  args.deadline_ns = p.deadline_ns;
  args.n_instrs = static_cast<int32_t>(plan.host.size());
  args.n_tokens = step.n_tokens;
  args.n_sequences = n_sequences;
  args.partials = p.partials.get();
  args.arrivals = p.control.get() + p.arrivals_offset;
  args.attention_splits = splits;
  args.unit_rows = plan.unit_rows;
  args.stream_slots = plan.stream_slots;
  args.slot_bytes = plan.slot_bytes;
  args.head_ready_base =
      plan.fused ? static_cast<int32_t>(p.head_ready_offset / sizeof(int32_t)) : 0;
  args.weights_offset = static_cast<int32_t>(work_bytes(widest_input(d), step.n_tokens, p.mma));
  args.mma = p.mma ? 1 : 0;
  args.prefetch = step.variant.prefetch ? 1 : 0;
  args.dims = {d.n_embd, d.n_head,      d.n_head_kv, d.head_dim,
               d.n_ff,   m.max_context, d.rms_eps,   d.rope_magnitude};
  for (int i = 0; i < n_sequences; ++i) {
    const StepSequence &s = step.sequences[static_cast<size_t>(i)];
    args.sequences[i] = {s.slot->length, s.n_tokens, s.first_token, 0, s.slot->cache.get()};
  }
  const DriverApi &api = device.api();
  device.check(api.cuMemsetD32Async(p.control.get(), 0,
                                    (p.counter_bytes + sizeof(PersistentStatus)) / 4,
                                    device.stream()),
               "cuMemsetD32Async (persistent decode counters)");
  if (!ctx.options.persistent_trace.empty()) {
    const size_t marks_bytes = plan.host.size() * kPersistentMarks * sizeof(uint64_t);
    if (p.trace.bytes() < marks_bytes)
      p.trace = DeviceBuffer(device, marks_bytes, "the persistent decode trace");
    device.check(api.cuMemsetD32Async(p.trace.get(), 0, marks_bytes / 4, device.stream()),
                 "cuMemsetD32Async (persistent decode trace)");
    args.trace = p.trace.get();
  }
  args.n_layer = d.n_layer;
  if (key.head) {
    args.head = m.lm_head->data.get();
    args.output_norm = m.output_norm;
    args.logits = a.logits.get();
    args.head_best = p.head_best.get();
    args.argmax = a.argmax.get();
    args.n_vocab = d.n_vocab;
  }
  if (p.producer_quantize) {
    args.quantize = 1;
    args.q8_groups = p.q8_groups;
    args.group_rows = p.control.get() + p.group_rows_offset;
    for (PersistentStage stage : {PersistentStage::qkv, PersistentStage::output,
                                  PersistentStage::ffn_up, PersistentStage::ffn_down})
      args.q8[static_cast<int>(stage)] = p.staged.get() + p.staged_offsets[static_cast<int>(stage)];
    for (PersistentStage stage : {PersistentStage::qkv, PersistentStage::ffn_up})
      args.q8_sumsq[static_cast<int>(stage)] =
          p.staged.get() + p.sums_offsets[static_cast<int>(stage)];
  }
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(p.shape.blocks);
  shape.block_x = kBlockThreads;
  shape.shared_bytes = static_cast<unsigned>(args.weights_offset + plan.weight_buffer_bytes);
  shape.cooperative = true;
  launch(device, ctx.kernels->get(p.kernel), shape, args);
  device.check(
      api.cuMemcpyDtoHAsync(p.status.get(), args.status, sizeof(PersistentStatus), device.stream()),
      "cuMemcpyDtoHAsync (persistent decode status)");
}

std::string take_persistent_stall(Context &ctx, BoundModel &m) {
  if (!m.persistent)
    return {};
  const PersistentStatus status = *m.persistent->status.get();
  if (status.abort == 0)
    return {};
  std::string where = strformat("instruction %d", status.instr);
  const std::vector<PersistentInstr> &list = m.persistent->plans.at(m.persistent->last_plan).host;
  if (status.instr >= 0 && static_cast<size_t>(status.instr) < list.size())
    where += " (" + describe_persistent_instr(list[static_cast<size_t>(status.instr)]) + ")";
  const std::string report =
      strformat("persistent decode stalled: block %d waited at %s for counter %d to reach %d; it "
                "stayed at %d for %d ms",
                status.block, where.c_str(), status.counter, status.target, status.observed,
                ctx.options.persistent_deadline_ms);
  ctx.log.warn(report + "; this step is run again launch by launch, and the model decodes that "
                        "way from now on");
  m.persistent.reset();
  m.persistent_off = true;
  return report;
}

namespace {

bool write_file(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

} // namespace

void take_persistent_trace(Context &ctx, BoundModel &m) {
  const std::string &path = ctx.options.persistent_trace;
  if (path.empty() || !m.persistent)
    return;
  PersistentDecode &p = *m.persistent;
  const std::vector<PersistentInstr> &plan = p.plans.at(p.last_plan).host;
  std::vector<uint64_t> marks(plan.size() * kPersistentMarks);
  ctx.device->download(marks.data(), p.trace.get(), marks.size() * sizeof(uint64_t));
  p.trace_summary.add(plan, marks, p.last_plan.tokens);
  const bool written = write_file(path, p.trace_summary.report()) &&
                       write_file(path + ".csv", persistent_trace_csv(plan, marks, p.shape.blocks));
  if (!written && !p.trace_write_failed) {
    p.trace_write_failed = true;
    ctx.log.warn("persistent_trace: cannot write " + path + " or " + path +
                 ".csv; the trace is kept in memory only");
  }
}

} // namespace bonsai::cuda

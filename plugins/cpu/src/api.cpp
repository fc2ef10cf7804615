// The ABI entry points: argument checks, exception-to-status translation and
// the exported API table. No exception leaves this file.
#include <cstdio>
#include <cstring>
#include <new>

#include "attention.hpp"
#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/entry_guard.hpp"
#include "bonsai/plugin/probe_answer.hpp"
#include "bonsai/plugin/step_entry_points.hpp"
#include "checkpoints.hpp"
#include "context.hpp"
#include "layered_model.hpp"
#include "plugin_error.hpp"
#include "probe.hpp"
#include "step.hpp"

namespace bonsai::cpu {
namespace {

using Entry = EntryPoints<Context, kContextMagic, NoCallScope, make_context>;

bonsai_status api_probe(bonsai_device_info *info) {
  return plugin::answer_probe(info, [](bonsai_device_info &filled) {
    fill_device_info(filled);
    return BONSAI_OK;
  });
}

void api_destroy_context(bonsai_context *handle) {
  Context *ctx = Entry::live(handle);
  if (ctx == nullptr)
    return;
  ctx->magic = 0;
  delete ctx;
}

bonsai_status api_supports_type(const bonsai_context *handle, uint32_t type) {
  return guarded(Entry::live(handle), [type](const Context &) {
    if (!is_supported_type(type))
      fail(BONSAI_ERR_UNSUPPORTED, strformat("ggml type %u is not supported", type));
  });
}

bonsai_status api_matmul(bonsai_context *handle, const bonsai_matmul_desc *desc) {
  return guarded(Entry::live(handle), [&](Context &ctx) {
    const bonsai_matmul_desc d = read_abi_struct(desc, "matmul: desc");
    const Weight *w = ctx.find_weight(d.weight);
    if (w == nullptr)
      fail_invalid("matmul: weight is not a weight of this context");
    check_matmul_desc(d, ctx.max_batch);
    ActInput in(d.x, w->cols, d.n_tokens, w->cols, ctx.matmul_scratch);
    ctx.runner().run(in, {{w, d.y, w->rows}});
  });
}

bonsai_status api_bind_model(bonsai_context *handle, const bonsai_model_desc *model) {
  return guarded(Entry::live(handle), [&](Context &ctx) {
    const bonsai_model_desc d = read_abi_struct(model, "bind_model: model", kModelDescV10Size);
    BindLimits limits;
    limits.max_batch = ctx.max_batch;
    limits.max_context = ctx.max_context;
    limits.kv_type = kv_type_for(ctx.kv_choice, *ctx.kernels, d.head_dim);
    auto bound = bind_model(
        d, [&ctx](const bonsai_weight *h) { return ctx.find_weight(h); }, limits);
    ctx.model = std::move(bound);
    ctx.step.close();
    ctx.log.debug(strformat("bonsai_cpu: bound a model of %d layers, n_embd %d, vocabulary %d; "
                            "KV cache %s (kv=%s)",
                            d.n_layer, d.n_embd, d.n_vocab,
                            limits.kv_type == KvType::F16 ? "f16" : "f32",
                            kv_choice_name(ctx.kv_choice)));
  });
}

bonsai_status api_supports_mixer(uint32_t kind) {
  return supports_mixer_kind(kind) ? BONSAI_OK : BONSAI_ERR_UNSUPPORTED;
}

} // namespace

// bind_layered_model's work (the common entry point has read the struct).
void bind_layered(Context &ctx, const bonsai_layered_model_desc &d) {
  BindLimits limits;
  limits.max_batch = ctx.max_batch;
  limits.max_context = ctx.max_context;
  limits.kv_type_for_head_dim = [&ctx](int head_dim) {
    return kv_type_for(ctx.kv_choice, *ctx.kernels, head_dim);
  };
  auto bound = bind_layered_model(
      d, [&ctx](const bonsai_weight *h) { return ctx.find_weight(h); }, limits);
  ctx.model = std::move(bound);
  ctx.step.close();
  const ModelDims &dims = ctx.model->dims;
  ctx.log.debug(strformat("bonsai_cpu: bound a layered model of %d layers (%d attention, %d "
                          "DeltaNet), n_embd %d; recurrent state %.1f MiB per sequence",
                          dims.n_layer, dims.n_kv_layers, dims.n_state_layers, dims.n_embd,
                          static_cast<double>(recurrent_state_bytes(ctx)) / (1 << 20)));
}

namespace {

const bonsai_layer_kinds_extension kLayerKinds = Entry::layer_kinds(api_supports_mixer);

const bonsai_hidden_states_extension kHiddenStates = Entry::hidden_states(&kLayerKinds.header);

const bonsai_sequences_extension kSequences = Entry::sequences(&kHiddenStates.header);

#ifndef BONSAI_CPU_PLUGIN_VERSION
#define BONSAI_CPU_PLUGIN_VERSION "0.0.0"
#endif

// `bonsai backends` shows it: name the kernel sets this build has.
#if defined(__aarch64__)
#define BONSAI_CPU_PLUGIN_SETS                                                                     \
  "AArch64 CPU: 1-bit/ternary GEMV/GEMM (reference, NEON, dotprod, i8mm)"
#else
#define BONSAI_CPU_PLUGIN_SETS                                                                     \
  "x86-64 CPU: 1-bit/ternary GEMV/GEMM (reference, AVX2, AVX-VNNI, AVX-512 VNNI)"
#endif

const bonsai_backend_api kApi = Entry::table({
    .name = "cpu",
    .version = BONSAI_CPU_PLUGIN_VERSION,
    .description = BONSAI_CPU_PLUGIN_SETS ", qwen3 and qwen35 layers, oneTBB threads",
    .probe = api_probe,
    .destroy_context = api_destroy_context,
    .supports_type = api_supports_type,
    .matmul = api_matmul,
    .bind_model = api_bind_model,
    .extensions = &kSequences.header,
});

} // namespace
} // namespace bonsai::cpu

extern "C" BONSAI_PLUGIN_EXPORT const bonsai_backend_api *
bonsai_backend_get_api(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return host_abi_major == BONSAI_ABI_MAJOR ? &bonsai::cpu::kApi : nullptr;
}

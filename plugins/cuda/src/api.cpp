// The ABI entry points: argument checks, the device context made current
// for each call, exception-to-status translation and the exported table. No
// exception leaves this file.
#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/entry_guard.hpp"
#include "bonsai/plugin/probe_answer.hpp"
#include "bonsai/plugin/step_entry_points.hpp"
#include "checkpoints.hpp"
#include "context.hpp"
#include "driver_library.hpp"
#include "launch.hpp"
#include "nvrtc_library.hpp"
#include "plugin_error.hpp"
#include "probe.hpp"
#include "slots.hpp"
#include "step.hpp"

namespace bonsai::cuda {
namespace {

// Every call runs with the context's device context current.
struct DeviceScope {
  explicit DeviceScope(const Context &ctx) : current(*ctx.device) {}
  CurrentContext current;
};

using Entry = EntryPoints<Context, kContextMagic, DeviceScope, make_context>;

// plugin::guarded with the device context current.
template <class Ctx, class Body> bonsai_status on_device(Ctx *ctx, Body &&body) {
  return plugin::guarded<DeviceScope>(ctx, std::forward<Body>(body));
}

bonsai_status api_probe(bonsai_device_info *info) {
  return plugin::answer_probe(info, [](bonsai_device_info &filled) {
    bonsai_status status = probe_devices(load_driver(), &filled);
    // Without NVRTC there are no kernels: report NO_DEVICE so "auto" falls
    // back instead of failing later in create_context.
    if (status == BONSAI_OK) {
      if (const NvrtcLoad nvrtc = load_nvrtc(); nvrtc.api == nullptr) {
        const std::string detail =
            strformat("found %s but cannot compile kernels: %s", filled.name, nvrtc.error.c_str());
        filled = bonsai_device_info{};
        std::snprintf(filled.detail, sizeof filled.detail, "%s", detail.c_str());
        status = BONSAI_ERR_NO_DEVICE;
      }
    }
    return status;
  });
}

void api_destroy_context(bonsai_context *handle) {
  Context *ctx = Entry::live(handle);
  if (ctx == nullptr)
    return;
  ctx->magic = 0;
  try {
    CurrentContext current(*ctx->device);
    ctx->release_device_objects();
  } catch (const std::exception &e) {
    // Destruction cannot fail. Without a current context the frees would go
    // to no context (or to another one), so they are skipped and the driver
    // reclaims the memory with the primary context.
    ctx->device->abandon();
    ctx->log.log(BONSAI_LOG_ERROR,
                 strformat("destroy_context: %s; the context's device memory and modules are "
                           "left to the driver",
                           e.what()));
  }
  delete ctx;
}

bonsai_status api_supports_type(const bonsai_context *handle, uint32_t type) {
  return on_device(Entry::live(handle), [type](const Context &) {
    TypeLayout layout;
    if (!type_layout(type, &layout))
      fail(BONSAI_ERR_UNSUPPORTED, strformat("ggml type %u is not supported", type));
  });
}

// Grows a scratch buffer to at least `bytes`.
void reserve(const Device &device, DeviceBuffer &buffer, size_t bytes, const char *what) {
  if (buffer.bytes() < bytes)
    buffer = DeviceBuffer(device, bytes, what);
}

bonsai_status api_matmul(bonsai_context *handle, const bonsai_matmul_desc *desc) {
  return on_device(Entry::live(handle), [&](Context &ctx) {
    const bonsai_matmul_desc d = read_abi_struct(desc, "matmul: desc");
    const Weight *w = ctx.find_weight(d.weight);
    if (w == nullptr)
      fail_invalid("matmul: weight is not a weight of this context");
    check_matmul_desc(d, ctx.max_batch);
    const size_t x_bytes = sizeof(float) * static_cast<size_t>(d.n_tokens) * w->cols;
    const size_t y_bytes = sizeof(float) * static_cast<size_t>(d.n_tokens) * w->rows;
    reserve(*ctx.device, ctx.matmul_x, x_bytes, "matmul input");
    reserve(*ctx.device, ctx.matmul_y, y_bytes, "matmul output");
    reserve(*ctx.device, ctx.matmul_int8,
            static_cast<size_t>(int8_staging_bytes(w->cols) * d.n_tokens) + 16,
            "matmul int8 input");
    ctx.device->upload(ctx.matmul_x.get(), d.x, x_bytes);
    const MatmulRows rows{ctx.matmul_x.get(), ctx.matmul_y.get(), d.n_tokens,
                          ctx.matmul_int8.get()};
    launch_matmul(*ctx.device, *ctx.kernels, *w, rows, false);
    ctx.device->download(d.y, ctx.matmul_y.get(), y_bytes);
  });
}

bonsai_status api_bind_model(bonsai_context *handle, const bonsai_model_desc *model) {
  return on_device(Entry::live(handle), [&](Context &ctx) {
    const bonsai_model_desc d = read_abi_struct(model, "bind_model: model", kModelDescV10Size);
    const BindLimits limits{ctx.max_context, ctx.max_batch, ctx.options.kv_f16};
    const WeightLookup find = [&ctx](const bonsai_weight *h) { return ctx.find_weight(h); };
    // A bad description leaves the current binding alone; a good one frees
    // it before allocating the new one (no double device memory).
    validate_model(*ctx.device, *ctx.kernels, d, find, limits);
    ctx.model.reset();
    ctx.step = StepState{};
    ctx.model = bind_model(*ctx.device, *ctx.kernels, d, find, limits);
    ctx.log.debug(strformat("bonsai_cuda: bound a model of %d layers, n_embd %d, vocabulary %d, "
                            "%d attention splits (keys shared out per step), %s KV cache",
                            d.n_layer, d.n_embd, d.n_vocab, ctx.model->n_splits,
                            ctx.options.kv_f16 ? "f16" : "f32"));
  });
}

bonsai_status api_supports_mixer(uint32_t kind) {
  return kind == BONSAI_MIXER_GATED_ATTENTION || kind == BONSAI_MIXER_GATED_DELTA_NET
             ? BONSAI_OK
             : BONSAI_ERR_UNSUPPORTED;
}

} // namespace

// bind_layered_model's work (the common entry point has read the struct).
void bind_layered(Context &ctx, const bonsai_layered_model_desc &d) {
  const BindLimits limits{ctx.max_context, ctx.max_batch, ctx.options.kv_f16};
  const WeightLookup find = [&ctx](const bonsai_weight *h) { return ctx.find_weight(h); };
  // As bind_model: a bad description leaves the current binding alone.
  validate_layered_model(*ctx.device, *ctx.kernels, d, find, limits);
  ctx.model.reset();
  ctx.step = StepState{};
  ctx.model = bind_layered_model(*ctx.device, *ctx.kernels, d, find, limits);
  const ModelDims &dims = ctx.model->dims;
  ctx.log.debug(strformat("bonsai_cuda: bound a layered model of %d layers (%d attention, %d "
                          "DeltaNet), n_embd %d; recurrent state %.1f MiB per sequence",
                          dims.n_layer, dims.n_kv_layers, dims.n_state_layers, dims.n_embd,
                          static_cast<double>(recurrent_state_bytes(ctx)) / (1 << 20)));
}

namespace {

const bonsai_layer_kinds_extension kLayerKinds = Entry::layer_kinds(api_supports_mixer);

const bonsai_hidden_states_extension kHiddenStates = Entry::hidden_states(&kLayerKinds.header);

const bonsai_sequences_extension kSequences = Entry::sequences(&kHiddenStates.header);

#ifndef BONSAI_CUDA_PLUGIN_VERSION
#define BONSAI_CUDA_PLUGIN_VERSION "0.0.0"
#endif

const bonsai_backend_api kApi = Entry::table({
    .name = "cuda",
    .version = BONSAI_CUDA_PLUGIN_VERSION,
    .description =
        "NVIDIA GPU via the CUDA Driver API: NVRTC-compiled 1-bit/ternary kernels, PTX disk cache, "
        "CUDA graph decode, qwen3 and qwen35 layers",
    .probe = api_probe,
    .destroy_context = api_destroy_context,
    .supports_type = api_supports_type,
    .matmul = api_matmul,
    .bind_model = api_bind_model,
    .extensions = &kSequences.header,
});

} // namespace
} // namespace bonsai::cuda

extern "C" BONSAI_PLUGIN_EXPORT const bonsai_backend_api *
bonsai_backend_get_api(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return host_abi_major == BONSAI_ABI_MAJOR ? &bonsai::cuda::kApi : nullptr;
}

// The ABI entry points: argument checks, the device context made current
// for each call, exception-to-status translation and the exported table. No
// exception leaves this file.
#include <cstdio>
#include <cstring>
#include <new>

#include "bonsai/bonsai_backend.h"
#include "context.hpp"
#include "driver_library.hpp"
#include "launch.hpp"
#include "nvrtc_library.hpp"
#include "plugin_error.hpp"
#include "probe.hpp"
#include "step.hpp"

namespace bonsai::cuda {
namespace {

const char *const kInvalidContext = "invalid context handle";

Context *live(bonsai_context *handle) {
  Context *ctx = to_context(handle);
  return ctx != nullptr && ctx->magic == kContextMagic ? ctx : nullptr;
}
const Context *live(const bonsai_context *handle) {
  const Context *ctx = to_context(handle);
  return ctx != nullptr && ctx->magic == kContextMagic ? ctx : nullptr;
}

// Runs body(ctx) with the device context current and turns exceptions into
// a status plus last_error.
template <class Ctx, class Body> bonsai_status guarded(Ctx *ctx, Body &&body) {
  if (ctx == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
  try {
    CurrentContext current(*ctx->device);
    body(*ctx);
    ctx->last_error.clear();
    return BONSAI_OK;
  } catch (const PluginError &e) {
    ctx->last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc &) {
    ctx->last_error = "out of host memory";
    return BONSAI_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    ctx->last_error = std::string("internal error: ") + e.what();
    return BONSAI_ERR_INTERNAL;
  } catch (...) {
    ctx->last_error = "internal error: unknown exception";
    return BONSAI_ERR_INTERNAL;
  }
}

void write_error(char *text, size_t size, const char *message) {
  if (text != nullptr && size > 0)
    std::snprintf(text, size, "%s", message);
}

bonsai_status api_probe(bonsai_device_info *info) {
  if (info == nullptr || info->struct_size < sizeof(bonsai_device_info))
    return BONSAI_ERR_INVALID_ARGUMENT;
  try {
    bonsai_device_info filled{};
    filled.struct_size = info->struct_size;
    bonsai_status status = probe_devices(load_driver(), &filled);
    // Without NVRTC there are no kernels: report NO_DEVICE so "auto" falls
    // back instead of failing later in create_context.
    if (status == BONSAI_OK) {
      if (const NvrtcLoad nvrtc = load_nvrtc(); nvrtc.api == nullptr) {
        const std::string detail =
            strformat("found %s but cannot compile kernels: %s", filled.name, nvrtc.error.c_str());
        filled = bonsai_device_info{};
        filled.struct_size = info->struct_size;
        std::snprintf(filled.detail, sizeof filled.detail, "%s", detail.c_str());
        status = BONSAI_ERR_NO_DEVICE;
      }
    }
    std::memcpy(info, &filled, sizeof(filled));
    return status;
  } catch (...) {
    return BONSAI_ERR_INTERNAL;
  }
}

bonsai_status api_create_context(const bonsai_context_desc *desc, bonsai_context **out,
                                 char *error_text, size_t error_text_size) {
  if (out == nullptr) {
    write_error(error_text, error_text_size, "create_context: out is NULL");
    return BONSAI_ERR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  try {
    const bonsai_context_desc d = read_abi_struct(desc, "create_context: desc");
    *out = to_handle(make_context(d).release());
    return BONSAI_OK;
  } catch (const PluginError &e) {
    write_error(error_text, error_text_size, e.what());
    return e.status();
  } catch (const std::bad_alloc &) {
    write_error(error_text, error_text_size, "create_context: out of host memory");
    return BONSAI_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    write_error(error_text, error_text_size, e.what());
    return BONSAI_ERR_INTERNAL;
  } catch (...) {
    write_error(error_text, error_text_size, "create_context: unknown internal error");
    return BONSAI_ERR_INTERNAL;
  }
}

void api_destroy_context(bonsai_context *handle) {
  Context *ctx = live(handle);
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

const char *api_last_error(const bonsai_context *handle) {
  const Context *ctx = live(handle);
  return ctx == nullptr ? kInvalidContext : ctx->last_error.c_str();
}

bonsai_status api_supports_type(const bonsai_context *handle, uint32_t type) {
  return guarded(live(handle), [type](const Context &) {
    TypeLayout layout;
    if (!type_layout(type, &layout))
      fail(BONSAI_ERR_UNSUPPORTED, strformat("ggml type %u is not supported", type));
  });
}

bonsai_status api_upload_weight(bonsai_context *handle, const bonsai_weight_desc *desc,
                                bonsai_weight **out) {
  return guarded(live(handle), [&](Context &ctx) {
    if (out == nullptr)
      fail_invalid("upload_weight: out is NULL");
    *out = nullptr;
    auto w = std::make_unique<Weight>(
        upload_weight(*ctx.device, read_abi_struct(desc, "upload_weight: desc")));
    Weight *raw = w.get();
    ctx.weights.emplace(raw, std::move(w));
    *out = to_handle(raw);
  });
}

bonsai_status api_free_weight(bonsai_context *handle, bonsai_weight *weight) {
  return guarded(live(handle), [&](Context &ctx) {
    const Weight *w = ctx.find_weight(weight);
    if (w == nullptr)
      fail_invalid("free_weight: the handle is not a weight of this context");
    if (ctx.model && ctx.model->used.count(w) != 0)
      fail_state("free_weight: " + w->label() + " is part of the bound model");
    ctx.weights.erase(w);
  });
}

// Grows a scratch buffer to at least `bytes`.
void reserve(const Device &device, DeviceBuffer &buffer, size_t bytes, const char *what) {
  if (buffer.bytes() < bytes)
    buffer = DeviceBuffer(device, bytes, what);
}

bonsai_status api_matmul(bonsai_context *handle, const bonsai_matmul_desc *desc) {
  return guarded(live(handle), [&](Context &ctx) {
    const bonsai_matmul_desc d = read_abi_struct(desc, "matmul: desc");
    const Weight *w = ctx.find_weight(d.weight);
    if (w == nullptr)
      fail_invalid("matmul: weight is not a weight of this context");
    if (d.n_tokens < 1 || d.n_tokens > ctx.max_batch)
      fail_invalid(strformat("matmul: n_tokens is %d; it must be in 1..max_batch (%d)", d.n_tokens,
                             ctx.max_batch));
    if (d.x == nullptr || d.y == nullptr)
      fail_invalid("matmul: x and y must not be NULL");
    const size_t x_bytes = sizeof(float) * static_cast<size_t>(d.n_tokens) * w->cols;
    const size_t y_bytes = sizeof(float) * static_cast<size_t>(d.n_tokens) * w->rows;
    reserve(*ctx.device, ctx.matmul_x, x_bytes, "matmul input");
    reserve(*ctx.device, ctx.matmul_y, y_bytes, "matmul output");
    ctx.device->upload(ctx.matmul_x.get(), d.x, x_bytes);
    launch_matmul(*ctx.device, *ctx.kernels, *w, ctx.matmul_x.get(), ctx.matmul_y.get(), d.n_tokens,
                  false);
    ctx.device->download(d.y, ctx.matmul_y.get(), y_bytes);
  });
}

bonsai_status api_bind_model(bonsai_context *handle, const bonsai_model_desc *model) {
  return guarded(live(handle), [&](Context &ctx) {
    const bonsai_model_desc d = read_abi_struct(model, "bind_model: model", kModelDescV10Size);
    const BindLimits limits{ctx.max_context, ctx.max_batch};
    const WeightLookup find = [&ctx](const bonsai_weight *h) { return ctx.find_weight(h); };
    // A bad description leaves the current binding alone; a good one frees
    // it before allocating the new one (no double device memory).
    validate_model(*ctx.device, *ctx.kernels, d, find, limits);
    ctx.model.reset();
    ctx.step = StepState{};
    ctx.model = bind_model(*ctx.device, *ctx.kernels, d, find, limits);
    ctx.log.debug(strformat("bonsai_cuda: bound a model of %d layers, n_embd %d, vocabulary %d, "
                            "%d attention splits of %d keys",
                            d.n_layer, d.n_embd, d.n_vocab, ctx.model->n_splits,
                            ctx.model->split_chunk));
  });
}

bonsai_status api_begin_step(bonsai_context *handle, const bonsai_step_desc *step) {
  return guarded(live(handle),
                 [&](Context &ctx) { step_begin(ctx, read_abi_struct(step, "begin_step: step")); });
}

bonsai_status api_encode_layer(bonsai_context *handle, int32_t layer) {
  return guarded(live(handle), [layer](Context &ctx) { step_encode_layer(ctx, layer); });
}

bonsai_status api_lm_head(bonsai_context *handle, const bonsai_lm_head_desc *desc) {
  return guarded(live(handle),
                 [&](Context &ctx) { step_lm_head(ctx, read_abi_struct(desc, "lm_head: desc")); });
}

bonsai_status api_end_step(bonsai_context *handle) {
  return guarded(live(handle), [](Context &ctx) { step_end(ctx); });
}

bonsai_status api_kv_reset(bonsai_context *handle) {
  return guarded(live(handle), [](Context &ctx) { kv_reset(ctx); });
}

bonsai_status api_kv_truncate(bonsai_context *handle, int32_t n_keep) {
  return guarded(live(handle), [n_keep](Context &ctx) { kv_truncate(ctx, n_keep); });
}

bonsai_status api_kv_length(const bonsai_context *handle, int32_t *length) {
  return guarded(live(handle), [length](const Context &ctx) {
    if (length == nullptr)
      fail_invalid("kv_length: length is NULL");
    *length = kv_length(ctx);
  });
}

#ifndef BONSAI_CUDA_PLUGIN_VERSION
#define BONSAI_CUDA_PLUGIN_VERSION "0.0.0"
#endif

const bonsai_backend_api kApi = {
    sizeof(bonsai_backend_api),
    BONSAI_ABI_MAJOR,
    BONSAI_ABI_MINOR,
    "cuda",
    BONSAI_CUDA_PLUGIN_VERSION,
    "NVIDIA GPU via the CUDA Driver API: NVRTC-compiled 1-bit/ternary kernels, PTX disk cache, "
    "CUDA graph decode",
    api_probe,
    api_create_context,
    api_destroy_context,
    api_last_error,
    api_supports_type,
    api_upload_weight,
    api_free_weight,
    api_matmul,
    api_bind_model,
    api_begin_step,
    api_encode_layer,
    api_lm_head,
    api_end_step,
    api_kv_reset,
    api_kv_truncate,
    api_kv_length,
};

} // namespace
} // namespace bonsai::cuda

extern "C" BONSAI_PLUGIN_EXPORT const bonsai_backend_api *
bonsai_backend_get_api(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return host_abi_major == BONSAI_ABI_MAJOR ? &bonsai::cuda::kApi : nullptr;
}

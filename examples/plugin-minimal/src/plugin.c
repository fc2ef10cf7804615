/* A minimal bonsai backend plugin: portable scalar C, no device, no threads.
 *
 * It implements the required groups of the ABI (docs/abi.md):
 *   1. probe and contexts    2. weight upload    3. matmul (GEMV/GEMM)
 * and answers UNSUPPORTED from bind_model, which the ABI allows: the host
 * then runs every Qwen3 layer, the LM head and the KV cache itself in f32 and
 * calls this plugin only for matrix products. The layer entries of the table
 * (begin_step ... kv_length) are NULL, which the host never calls then.
 *
 * Rules every function here follows:
 *  - never crash on bad input: check NULLs, struct_size, handles and ranges,
 *    and return a status; on a context, leave a message for last_error();
 *  - no exceptions, longjmp or abort() across the boundary (trivial in C);
 *  - no global mutable state: everything lives in the context, so different
 *    contexts may run on different threads at the same time. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "formats.h"
#include "plugin.h"

#ifndef EXAMPLE_PLUGIN_VERSION
#define EXAMPLE_PLUGIN_VERSION "1.0.0"
#endif

/* ---- group 1: probe and contexts ---------------------------------------- */

static bonsai_status example_probe(bonsai_device_info *info) {
  if (info == NULL || info->struct_size < SIZE_THROUGH(bonsai_device_info, detail))
    return BONSAI_ERR_INVALID_ARGUMENT;
  /* Fill only the fields we know, and never touch struct_size: a newer host
   * may have a larger struct whose tail we cannot see. */
  info->device_count = 1;
  snprintf(info->name, sizeof(info->name), "host CPU (scalar example)");
  const long page = sysconf(_SC_PAGESIZE);
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long free_pages = sysconf(_SC_AVPHYS_PAGES);
  info->total_memory_bytes = page > 0 && pages > 0 ? (uint64_t)page * (uint64_t)pages : 1;
  info->free_memory_bytes = page > 0 && free_pages > 0 ? (uint64_t)page * (uint64_t)free_pages : 0;
  info->compute_major = 0;
  info->compute_minor = 0;
  snprintf(info->detail, sizeof(info->detail), "portable scalar C kernels: f32 f16 q1_0 q2_0");
#if BONSAI_ABI_MINOR >= 1
  /* ABI 1.1 fields, only when the host's struct has them (a 1.0 host's does
   * not). A slow example ranks below bonsai's CPU plugin (100), so that
   * `--backend auto` never prefers it; it is used when named. Built against
   * the 1.0 header the fields do not exist, and the host reads 0. */
  if (info->struct_size >= SIZE_THROUGH(bonsai_device_info, reserved)) {
    info->preference = 10;
    info->reserved = 0;
  }
#endif
  return BONSAI_OK;
}

/* create_context has no context to hold a message yet: it writes its reason
 * into the host's buffer. */
static bonsai_status refuse(char *error_text, size_t error_text_size, bonsai_status status,
                            const char *message) {
  if (error_text != NULL && error_text_size > 0)
    snprintf(error_text, error_text_size, "%s", message);
  return status;
}

/* Options are "key=value" pairs separated by ';'. This plugin has none, so
 * it warns about each key and carries on, as the ABI asks. */
static void warn_about_options(const bonsai_context *ctx, const char *options) {
  while (options != NULL && *options != '\0') {
    const char *end = strchr(options, ';');
    const size_t length = end ? (size_t)(end - options) : strlen(options);
    if (length > 0)
      context_log(ctx, BONSAI_LOG_WARN, "unknown option '%.*s' ignored", (int)length, options);
    options = end ? end + 1 : NULL;
  }
}

static bonsai_status example_create_context(const bonsai_context_desc *desc, bonsai_context **out,
                                            char *error_text, size_t error_text_size) {
  if (out == NULL)
    return refuse(error_text, error_text_size, BONSAI_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL; /* on every failure *out stays NULL */
  if (desc == NULL || desc->struct_size < SIZE_THROUGH(bonsai_context_desc, options))
    return refuse(error_text, error_text_size, BONSAI_ERR_INVALID_ARGUMENT,
                  "the context description is NULL or its struct_size is too small");
  if (desc->device_index != 0)
    return refuse(error_text, error_text_size, BONSAI_ERR_INVALID_ARGUMENT,
                  "device_index must be 0: this plugin has one device");
  if (desc->max_context < 1 || desc->max_batch < 1)
    return refuse(error_text, error_text_size, BONSAI_ERR_INVALID_ARGUMENT,
                  "max_context and max_batch must be at least 1");
  bonsai_context *ctx = context_create(desc);
  if (ctx == NULL)
    return refuse(error_text, error_text_size, BONSAI_ERR_OUT_OF_MEMORY, "out of memory");
  warn_about_options(ctx, desc->options);
  context_log(ctx, BONSAI_LOG_DEBUG, "context created (max_batch %d)", desc->max_batch);
  *out = ctx;
  return BONSAI_OK;
}

static void example_destroy_context(bonsai_context *ctx) {
  if (ctx != NULL) /* NULL is a no-op */
    context_destroy(ctx);
}

static const char *example_last_error(const bonsai_context *ctx) {
  return ctx != NULL ? ctx->last_error : "the context is NULL";
}

static bonsai_status example_supports_type(const bonsai_context *ctx, uint32_t type) {
  if (ctx == NULL)
    return BONSAI_ERR_INVALID_ARGUMENT;
  if (format_is_supported(type))
    return BONSAI_OK;
  /* last_error takes a const context but the message is the context's
   * mutable scratch; this is the one cast the plugin needs. */
  return context_fail((bonsai_context *)ctx, BONSAI_ERR_UNSUPPORTED,
                      "ggml type %u is not supported (f32, f16, q1_0, q2_0)", type);
}

/* ---- group 4, declined ------------------------------------------------- */

static bonsai_status example_bind_model(bonsai_context *ctx, const bonsai_model_desc *model) {
  (void)model;
  if (ctx == NULL)
    return BONSAI_ERR_INVALID_ARGUMENT;
  /* UNSUPPORTED is not an error for the host: it switches to running the
   * layers itself over matmul(). A faster plugin implements bind_model and
   * the step functions to keep activations on its device. */
  return context_fail(ctx, BONSAI_ERR_UNSUPPORTED,
                      "this plugin provides matmul only; the host runs the layers");
}

/* ---- the table and the entry point -------------------------------------- */

static const bonsai_backend_api example_api = {
    .struct_size = sizeof(bonsai_backend_api),
    .abi_major = BONSAI_ABI_MAJOR,
    .abi_minor = BONSAI_ABI_MINOR,
    .name = "example",
    .version = EXAMPLE_PLUGIN_VERSION,
    .description = "minimal scalar example plugin (matmul only; the host runs the layers)",
    .probe = example_probe,
    .create_context = example_create_context,
    .destroy_context = example_destroy_context,
    .last_error = example_last_error,
    .supports_type = example_supports_type,
    .upload_weight = example_upload_weight,
    .free_weight = example_free_weight,
    .matmul = example_matmul,
    .bind_model = example_bind_model,
    /* begin_step, encode_layer, lm_head, end_step and kv_*: NULL (see above). */
};

/* The one exported symbol. The host passes its ABI version; a plugin serves
 * only its own major version and returns NULL for any other. */
BONSAI_PLUGIN_EXPORT const bonsai_backend_api *bonsai_backend_get_api(uint32_t host_abi_major,
                                                                      uint32_t host_abi_minor) {
  (void)host_abi_minor; /* a newer minor host reads only what our struct_size covers */
  return host_abi_major == BONSAI_ABI_MAJOR ? &example_api : NULL;
}

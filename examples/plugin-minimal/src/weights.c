/* Group 2 of the ABI: upload_weight and free_weight. */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "formats.h"
#include "plugin.h"

bonsai_status example_upload_weight(bonsai_context *ctx, const bonsai_weight_desc *desc,
                                    bonsai_weight **out) {
  if (ctx == NULL)
    return BONSAI_ERR_INVALID_ARGUMENT; /* no context to store a message in */
  if (out == NULL)
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, "upload_weight: out is NULL");
  *out = NULL;
  if (desc == NULL || desc->struct_size < SIZE_THROUGH(bonsai_weight_desc, name))
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                        "upload_weight: the description is NULL or its struct_size is too small");
  const char *name = desc->name ? desc->name : "(unnamed)";
  if (!format_is_supported(desc->type))
    return context_fail(ctx, BONSAI_ERR_UNSUPPORTED,
                        "upload_weight(%s): ggml type %u is not supported (f32, f16, q1_0, q2_0)",
                        name, desc->type);
  const size_t row_bytes = format_row_bytes(desc->type, desc->cols);
  if (row_bytes == 0 || desc->rows <= 0)
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                        "upload_weight(%s): %lld x %lld is not a valid shape for type %u", name,
                        (long long)desc->rows, (long long)desc->cols, desc->type);
  if (desc->data == NULL || desc->nbytes / row_bytes != (uint64_t)desc->rows ||
      desc->nbytes % row_bytes != 0)
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                        "upload_weight(%s): data is NULL or nbytes %llu is not %lld rows of %zu "
                        "bytes",
                        name, (unsigned long long)desc->nbytes, (long long)desc->rows, row_bytes);

  struct bonsai_weight *w = calloc(1, sizeof(*w));
  if (w == NULL)
    return context_fail(ctx, BONSAI_ERR_OUT_OF_MEMORY, "upload_weight(%s): out of memory", name);
  w->type = desc->type;
  w->rows = desc->rows;
  w->cols = desc->cols;
  w->row_bytes = row_bytes;
  if (desc->flags & BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT) {
    /* The host promises the bytes outlive this context (its read-only mmap
     * of the GGUF file): keep the pointer, copy nothing. */
    w->data = desc->data;
  } else {
    /* Borrowed for this call only: copy. A device plugin would upload here
     * (and might repack into a layout its kernels prefer). */
    w->owned = malloc(desc->nbytes);
    if (w->owned == NULL) {
      free(w);
      return context_fail(ctx, BONSAI_ERR_OUT_OF_MEMORY,
                          "upload_weight(%s): out of memory for "
                          "%llu bytes",
                          name, (unsigned long long)desc->nbytes);
    }
    memcpy(w->owned, desc->data, desc->nbytes);
    w->data = w->owned;
  }
  w->next = ctx->weights;
  ctx->weights = w;
  *out = w;
  return BONSAI_OK;
}

bonsai_status example_free_weight(bonsai_context *ctx, bonsai_weight *weight) {
  if (ctx == NULL)
    return BONSAI_ERR_INVALID_ARGUMENT;
  /* Unlink it, which also proves it is ours (freeing twice fails here). */
  for (struct bonsai_weight **link = &ctx->weights; *link != NULL; link = &(*link)->next) {
    if (*link == weight) {
      *link = weight->next;
      free(weight->owned);
      free(weight);
      return BONSAI_OK;
    }
  }
  return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                      "free_weight: the handle is NULL or does not belong to this context");
}

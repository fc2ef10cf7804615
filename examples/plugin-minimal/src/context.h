/* The plugin's private view of the ABI's opaque objects. The host only ever
 * holds pointers to them; their layout is ours to choose. */
#ifndef EXAMPLE_CONTEXT_H
#define EXAMPLE_CONTEXT_H

#include <stddef.h>

#include "bonsai/bonsai_backend.h"

/* The end of `last_field` in `type`: with a 1.0 struct's last field, the size
 * that struct had in ABI 1.0. A host built with a later minor version passes
 * a larger struct_size (fields we do not know, which we ignore); a smaller
 * one cannot be a valid 1.0 struct. With a later field: whether the host's
 * struct has room for it. */
#define SIZE_THROUGH(type, last_field)                                                             \
  (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

/* One uploaded weight. Contexts keep their weights in a linked list, which is
 * also how a handle is validated: a pointer is ours only if it is on the list
 * (a foreign pointer is never dereferenced). */
struct bonsai_weight {
  struct bonsai_weight *next;
  uint32_t type;
  int64_t rows, cols;
  size_t row_bytes;
  const uint8_t *data; /* the bytes we read: `owned`, or the host's borrowed mmap */
  uint8_t *owned;      /* our copy, or NULL when borrowing */
};

struct bonsai_context {
  int32_t max_batch; /* most tokens one matmul may carry */
  bonsai_log_fn log; /* NULL: stay silent */
  void *log_user_data;
  bonsai_log_level log_level;
  struct bonsai_weight *weights;
  float *row_buffer; /* one dequantized weight row, grown on demand */
  int64_t row_buffer_cols;
  char last_error[512];
};

/* Records the message last_error() returns and gives back `status`, so a
 * failing path reads `return fail(ctx, STATUS, "...", ...);`. */
bonsai_status context_fail(bonsai_context *ctx, bonsai_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Sends a message to the host's log sink when `level` is wanted. */
void context_log(const bonsai_context *ctx, bonsai_log_level level, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Creates a context from a validated description (see plugin.c). NULL when
 * out of memory. */
bonsai_context *context_create(const bonsai_context_desc *desc);
/* Frees the context and every weight it still owns. */
void context_destroy(bonsai_context *ctx);

/* The weight if `handle` belongs to ctx, else NULL. */
struct bonsai_weight *context_find_weight(const bonsai_context *ctx, const bonsai_weight *handle);

#endif

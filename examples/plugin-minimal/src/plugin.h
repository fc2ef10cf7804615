/* The ABI functions this plugin implements, one file per group. */
#ifndef EXAMPLE_PLUGIN_H
#define EXAMPLE_PLUGIN_H

#include "bonsai/bonsai_backend.h"

/* weights.c */
bonsai_status example_upload_weight(bonsai_context *ctx, const bonsai_weight_desc *desc,
                                    bonsai_weight **out);
bonsai_status example_free_weight(bonsai_context *ctx, bonsai_weight *weight);

/* matmul.c */
bonsai_status example_matmul(bonsai_context *ctx, const bonsai_matmul_desc *desc);

#endif

/*
 * bonsai backend ABI, version 1.0.
 *
 * The contract between the bonsai host and a backend plugin (a shared library
 * such as libbonsai_cpu.so). A plugin includes this header and nothing else
 * from bonsai, and exports exactly one symbol: bonsai_backend_get_api().
 *
 * Rules that hold for the whole header (docs/abi.md explains them at length):
 *  - Every function returns a bonsai_status, except the few documented
 *    otherwise. On failure, a function that takes a context stores a
 *    human-readable message that last_error() returns.
 *  - Every struct passed across the boundary begins with `struct_size`, set
 *    by whoever fills the struct to sizeof() of the struct it was compiled
 *    with. A reader never touches bytes past struct_size; fields appended by
 *    a later minor version read as zero/NULL when absent.
 *  - No ownership crosses the boundary unless a comment next to the field
 *    says so. Pointers into host memory are borrowed for the duration of the
 *    call only, unless stated otherwise.
 *  - Threading: a context is used by one thread at a time (the host
 *    serializes calls on it). Different contexts may be used from different
 *    threads at the same time. The API table and probe() are callable from
 *    any thread at any time.
 *  - No C++ exceptions, longjmp or abort() may cross the boundary.
 *
 * Matrix convention (as GGUF stores it): a weight has `cols` inputs (ggml's
 * ne0, contiguous in memory) and `rows` outputs (ne1). y = W x means
 * y[r] = sum_c W[r][c] * x[c].
 */
#ifndef BONSAI_BACKEND_H
#define BONSAI_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version a plugin or host was compiled against. A major bump breaks
 * compatibility; a minor bump only appends fields/functions. */
#define BONSAI_ABI_MAJOR 1
#define BONSAI_ABI_MINOR 0

/* The single symbol a plugin exports (use BONSAI_PLUGIN_EXPORT on it). */
#define BONSAI_BACKEND_ENTRY_SYMBOL "bonsai_backend_get_api"

#if defined(_WIN32)
#define BONSAI_PLUGIN_EXPORT __declspec(dllexport)
#else
#define BONSAI_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Status codes and logging                                                 */
/* ------------------------------------------------------------------------ */

typedef enum bonsai_status {
  BONSAI_OK = 0,                   /* success */
  BONSAI_ERR_INVALID_ARGUMENT = 1, /* NULL pointer, bad size, bad handle, out of range */
  BONSAI_ERR_UNSUPPORTED = 2,      /* valid request this plugin does not implement */
  BONSAI_ERR_NO_DEVICE = 3,        /* no usable device (probe) */
  BONSAI_ERR_OUT_OF_MEMORY = 4,    /* host or device allocation failed */
  BONSAI_ERR_BAD_STATE = 5,        /* call out of order (e.g. encode before begin_step) */
  BONSAI_ERR_INTERNAL = 6          /* anything else (driver error, ...) */
} bonsai_status;

typedef enum bonsai_log_level {
  BONSAI_LOG_TRACE = 0,
  BONSAI_LOG_DEBUG = 1,
  BONSAI_LOG_INFO = 2,
  BONSAI_LOG_WARN = 3,
  BONSAI_LOG_ERROR = 4,
  BONSAI_LOG_OFF = 5
} bonsai_log_level;

/* Log sink the host hands to a context. May be called from any thread the
 * plugin runs (the host's sink is thread-safe). `message` is borrowed for the
 * call and has no trailing newline. */
typedef void (*bonsai_log_fn)(void *user_data, bonsai_log_level level, const char *message);

/* ------------------------------------------------------------------------ */
/* Opaque objects                                                           */
/* ------------------------------------------------------------------------ */

/* One execution context: a device, its uploaded weights, one bound model, its
 * activations and one KV cache (one sequence). Created and destroyed by the
 * plugin on the host's request. */
typedef struct bonsai_context bonsai_context;

/* An uploaded weight (matrix or vector). Owned by the context that made it;
 * freed by free_weight() or by destroy_context(). */
typedef struct bonsai_weight bonsai_weight;

/* ------------------------------------------------------------------------ */
/* Group 1: device probe and contexts                                       */
/* ------------------------------------------------------------------------ */

typedef struct bonsai_device_info {
  uint32_t struct_size;        /* in: sizeof(bonsai_device_info) of the host */
  uint32_t device_count;       /* out: usable devices (0 with NO_DEVICE) */
  char name[128];              /* out: device 0's name, NUL-terminated */
  uint64_t total_memory_bytes; /* out: device 0 memory (host RAM for a CPU) */
  uint64_t free_memory_bytes;  /* out: free now; 0 if unknown */
  uint32_t compute_major;      /* out: e.g. CUDA compute capability major; 0 if n/a */
  uint32_t compute_minor;      /* out: minor part; 0 if n/a */
  char detail[256];            /* out: features or, with NO_DEVICE, why not */
} bonsai_device_info;

typedef struct bonsai_context_desc {
  uint32_t struct_size;       /* sizeof(bonsai_context_desc) of the host */
  int32_t device_index;       /* which device, 0-based */
  int32_t max_context;        /* KV cache capacity in positions (>= 1) */
  int32_t max_batch;          /* most tokens a single step or matmul may carry (>= 1) */
  int32_t n_threads;          /* CPU worker threads; 0 = plugin's choice */
  bonsai_log_fn log;          /* log sink; NULL = plugin stays silent */
  void *log_user_data;        /* passed back to `log` unchanged */
  bonsai_log_level log_level; /* least severe level worth sending */
  /* Plugin-specific options as "key=value" pairs separated by ';' (e.g.
   * "kernels=reference"); NULL or "" for none. Unknown keys are ignored with
   * a warning through `log`. Borrowed for the call. */
  const char *options;
} bonsai_context_desc;

/* ------------------------------------------------------------------------ */
/* Group 2: weight upload                                                   */
/* ------------------------------------------------------------------------ */

/* Weight encodings, the values of bonsai_weight_desc.type and of
 * supports_type(). Each is the ggml type id where ggml has one; layouts are in
 * docs/formats.md. The host converts the other encodings found in files
 * (PQ2_0 142, PTQ1_0 143, TQ1_0 34, TQ2_0 35, Q4_0 2) exactly to one of these
 * unless a plugin's supports_type() accepts them as stored. */
typedef enum bonsai_weight_type {
  BONSAI_WEIGHT_F32 = 0,   /* 32-bit floats */
  BONSAI_WEIGHT_F16 = 1,   /* IEEE half floats */
  BONSAI_WEIGHT_Q8_0 = 8,  /* 32 per block: f16 d, 32 int8; value q * d */
  BONSAI_WEIGHT_BF16 = 30, /* bfloat16 */
  BONSAI_WEIGHT_Q1_0 = 41, /* 128 per block: f16 d, 16 bytes of signs (set +d, clear -d) */
  BONSAI_WEIGHT_Q2_0 = 42, /* 128 per block: f16 d, 32 bytes of 2-bit codes; (code - 1) * d */
  /* Mainline llama.cpp's Q2_0: 64 per block, f16 d + 16 bytes of codes. Files
   * store it as 42 too; bonsai tells them apart by size and gives it this id.
   * Plugins built before it existed report UNSUPPORTED, and the host then
   * converts to Q8_0. */
  BONSAI_WEIGHT_Q2_0_G64 = 1042
} bonsai_weight_type;

/* Host promise for upload_weight(): `data` stays valid and unchanged until the
 * context is destroyed (e.g. it points into a read-only mmap of the model
 * file), so the plugin may keep the pointer instead of copying. */
#define BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT 0x1u

typedef struct bonsai_weight_desc {
  uint32_t struct_size; /* sizeof(bonsai_weight_desc) of the host */
  uint32_t type;        /* a bonsai_weight_type value */
  int64_t cols;         /* inputs per row (ggml ne0); a whole number of blocks */
  int64_t rows;         /* outputs (ggml ne1); 1 for a vector such as a norm */
  const void *data;     /* the bytes exactly as stored in GGUF, rows contiguous */
  uint64_t nbytes;      /* size of `data`; must equal rows * row size of `type` */
  uint32_t flags;       /* BONSAI_WEIGHT_* bits */
  const char *name;     /* tensor name for messages (may be NULL); borrowed */
} bonsai_weight_desc;

/* ------------------------------------------------------------------------ */
/* Group 3: GEMV / GEMM                                                     */
/* ------------------------------------------------------------------------ */

typedef struct bonsai_matmul_desc {
  uint32_t struct_size;        /* sizeof(bonsai_matmul_desc) of the host */
  const bonsai_weight *weight; /* W: rows x cols */
  int32_t n_tokens;            /* 1 = GEMV; > 1 = GEMM; 1..max_batch */
  const float *x;              /* in: n_tokens x cols, row-major, host memory */
  float *y;                    /* out: n_tokens x rows, row-major, host memory */
} bonsai_matmul_desc;

/* ------------------------------------------------------------------------ */
/* Group 4: full-layer encode of a Qwen3 decoder                            */
/* ------------------------------------------------------------------------ */

/* The weights of one decoder layer (ARCHITECTURE.md §1). All handles belong
 * to the same context. Matrices: wq rows = n_head*head_dim, wk/wv rows =
 * n_head_kv*head_dim, wo rows = n_embd, w_gate/w_up rows = n_ff, w_down rows =
 * n_embd. Norms are vectors (rows = 1): attn_norm/ffn_norm of n_embd,
 * q_norm/k_norm of head_dim. */
typedef struct bonsai_layer_weights {
  uint32_t struct_size;           /* sizeof(bonsai_layer_weights) of the host */
  const bonsai_weight *attn_norm; /* RMSNorm before attention */
  const bonsai_weight *wq;        /* query projection */
  const bonsai_weight *wk;        /* key projection */
  const bonsai_weight *wv;        /* value projection */
  const bonsai_weight *q_norm;    /* per-head RMSNorm of q */
  const bonsai_weight *k_norm;    /* per-head RMSNorm of k */
  const bonsai_weight *wo;        /* attention output projection */
  const bonsai_weight *ffn_norm;  /* RMSNorm before the MLP */
  const bonsai_weight *w_gate;    /* SwiGLU gate projection */
  const bonsai_weight *w_up;      /* SwiGLU up projection */
  const bonsai_weight *w_down;    /* MLP down projection */
} bonsai_layer_weights;

typedef struct bonsai_model_desc {
  uint32_t struct_size;             /* sizeof(bonsai_model_desc) of the host */
  int32_t n_embd;                   /* hidden size */
  int32_t n_layer;                  /* decoder layers */
  int32_t n_head;                   /* query heads */
  int32_t n_head_kv;                /* key/value heads; n_head % n_head_kv == 0 */
  int32_t head_dim;                 /* per-head size (even) */
  int32_t n_ff;                     /* MLP inner size */
  int32_t n_vocab;                  /* rows of token_embd and lm_head */
  float rms_eps;                    /* RMSNorm epsilon */
  float rope_freq_base;             /* NEOX RoPE base: angle = pos * base^(-2i/head_dim) */
  const bonsai_weight *token_embd;  /* n_vocab rows of n_embd */
  const bonsai_weight *output_norm; /* final RMSNorm, n_embd */
  const bonsai_weight *lm_head;     /* n_vocab rows of n_embd; == token_embd when tied */
  /* n_layer entries; copied by bind_model. Every entry's struct_size must be
   * the same, and the reader steps through the array by layers[0].struct_size
   * bytes (not its own sizeof), so a host built with a later minor version
   * (larger entries) still works with an older plugin. */
  const bonsai_layer_weights *layers;
} bonsai_model_desc;

/* One step: n_tokens tokens appended to the sequence. */
typedef struct bonsai_step_desc {
  uint32_t struct_size;     /* sizeof(bonsai_step_desc) of the host */
  int32_t n_tokens;         /* 1..max_batch; kv_length + n_tokens <= max_context */
  const int32_t *token_ids; /* n_tokens ids in [0, n_vocab) */
  /* n_tokens RoPE positions. In ABI 1.0 positions[i] must equal
   * kv_length + i (tokens fill the KV cache in order); other values give
   * INVALID_ARGUMENT. */
  const int32_t *positions;
} bonsai_step_desc;

/* ------------------------------------------------------------------------ */
/* Group 5: LM head                                                         */
/* ------------------------------------------------------------------------ */

typedef struct bonsai_lm_head_desc {
  uint32_t struct_size; /* sizeof(bonsai_lm_head_desc) of the host */
  int32_t first_token;  /* first token of the current step to project, 0-based */
  int32_t n_outputs;    /* how many consecutive tokens from first_token (>= 1) */
  /* out: n_outputs x n_vocab logits, host memory; NULL = do not copy logits */
  float *logits;
  /* out: n_outputs argmax ids (lowest id wins ties); NULL = not wanted. With
   * logits == NULL a device plugin computes this without copying logits. */
  int32_t *argmax;
} bonsai_lm_head_desc;

/* ------------------------------------------------------------------------ */
/* The API table                                                            */
/* ------------------------------------------------------------------------ */

typedef struct bonsai_backend_api {
  uint32_t struct_size;    /* sizeof(bonsai_backend_api) the plugin was built with */
  uint32_t abi_major;      /* BONSAI_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;      /* BONSAI_ABI_MINOR the plugin was built with */
  const char *name;        /* short backend name, e.g. "cpu"; static storage */
  const char *version;     /* plugin version, e.g. "0.1.0"; static storage */
  const char *description; /* one line for `bonsai backends`; static storage */

  /* --- group 1: device --- */

  /* Fills *info. Returns OK when at least one device is usable, NO_DEVICE
   * (with info->detail saying why) when none is; never crashes for lack of a
   * driver. Needs no context; may be called any number of times. */
  bonsai_status (*probe)(bonsai_device_info *info);

  /* Creates a context on desc->device_index. On failure *out is NULL and, if
   * error_text is not NULL, a NUL-terminated reason is written there
   * (truncated to error_text_size bytes). */
  bonsai_status (*create_context)(const bonsai_context_desc *desc, bonsai_context **out,
                                  char *error_text, size_t error_text_size);

  /* Destroys a context and everything it owns (weights, model binding, KV).
   * NULL is a no-op. Returns nothing: destruction cannot fail. */
  void (*destroy_context)(bonsai_context *ctx);

  /* The message of the last failed call on ctx ("" if none). The text stays
   * valid until the next call on ctx. Never NULL for a valid ctx. */
  const char *(*last_error)(const bonsai_context *ctx);

  /* OK if upload_weight() accepts the ggml type id, UNSUPPORTED if not. */
  bonsai_status (*supports_type)(const bonsai_context *ctx, uint32_t type);

  /* --- group 2: weights --- */

  /* Uploads (or, with BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT, may borrow) one
   * weight and returns a handle owned by ctx. The plugin may repack it. */
  bonsai_status (*upload_weight)(bonsai_context *ctx, const bonsai_weight_desc *desc,
                                 bonsai_weight **out);

  /* Frees one weight. It must not be part of a bound model (BAD_STATE). */
  bonsai_status (*free_weight)(bonsai_context *ctx, bonsai_weight *weight);

  /* --- group 3: GEMV / GEMM --- */

  /* y = W x for each of n_tokens input rows. Results are f32; plugins may
   * quantize activations (see docs/abi.md, numerics). */
  bonsai_status (*matmul)(bonsai_context *ctx, const bonsai_matmul_desc *desc);

  /* --- group 4: full-layer encode --- */

  /* Binds a model once: validates shapes, copies the description and
   * allocates activations for max_batch tokens and the KV cache for
   * max_context positions. A context binds at most one model; binding again
   * replaces it and resets the KV cache.
   * Optional: a plugin may return UNSUPPORTED here. The host then runs every
   * layer, the LM head and the KV cache itself through matmul() (slower) and
   * never calls begin_step ... kv_length on that context; those entries may
   * then be NULL. See docs/abi.md. */
  bonsai_status (*bind_model)(bonsai_context *ctx, const bonsai_model_desc *model);

  /* Starts a step: looks up the embeddings of the step's tokens. A step left
   * open by an earlier failure is discarded. */
  bonsai_status (*begin_step)(bonsai_context *ctx, const bonsai_step_desc *step);

  /* Runs decoder layer `layer` (0-based, in order 0..n_layer-1) on the open
   * step, writing the step's keys/values into the KV cache. */
  bonsai_status (*encode_layer)(bonsai_context *ctx, int32_t layer);

  /* --- group 5: LM head --- */

  /* Final RMSNorm and output projection for tokens of the open step, after
   * its last layer. May be called several times per step. */
  bonsai_status (*lm_head)(bonsai_context *ctx, const bonsai_lm_head_desc *desc);

  /* Closes the step: the KV length grows by the step's n_tokens. A step that
   * is never ended leaves the KV length unchanged. */
  bonsai_status (*end_step)(bonsai_context *ctx);

  /* --- group 6: KV cache --- */

  /* Empties the KV cache (length 0). Discards a step left open (begun but
   * never ended, e.g. abandoned on cancel), as kv_truncate does. */
  bonsai_status (*kv_reset)(bonsai_context *ctx);

  /* Keeps the first n_keep positions (0 <= n_keep <= length), forgets the
   * rest: the next step continues at position n_keep. Discards an open step. */
  bonsai_status (*kv_truncate)(bonsai_context *ctx, int32_t n_keep);

  /* Writes the number of positions in the KV cache to *length. */
  bonsai_status (*kv_length)(const bonsai_context *ctx, int32_t *length);
} bonsai_backend_api;

/* The entry point's type. Returns the plugin's table (static storage, valid
 * while the library is loaded) or NULL when the plugin cannot serve a host
 * of host_abi_major. The host checks abi_major itself too. */
typedef const bonsai_backend_api *(*bonsai_backend_get_api_fn)(uint32_t host_abi_major,
                                                               uint32_t host_abi_minor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BONSAI_BACKEND_H */

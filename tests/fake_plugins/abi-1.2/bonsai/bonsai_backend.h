/*
 * bonsai backend ABI, version 1.2.
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
#define BONSAI_ABI_MINOR 2

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
 * activations and one KV cache (one sequence; more with the sequences
 * extension of ABI 1.1). Created and destroyed by the
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
  /* --- Added in ABI 1.1: a plugin writes these only when struct_size covers
   * them (offsetof(bonsai_device_info, reserved) + sizeof(uint32_t)); a 1.0
   * plugin leaves them as the host set them (0). A 1.1 plugin still accepts
   * a 1.0 host's shorter struct. --- */
  /* out: how strongly `--backend auto` should prefer this plugin when its
   * probe is OK: among usable plugins the highest wins. 0 = not stated (a 1.0
   * plugin), ranked below every stated one. bonsai's own: CPU 100, CUDA 200
   * (docs/abi.md, "Choosing a plugin"). */
  uint32_t preference;
  uint32_t reserved; /* out: 0; keeps the size a multiple of 8 */
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

/* The weights of one decoder layer (docs/architecture.md, "The model"). All handles belong
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
  /* --- Added in ABI 1.1: a reader checks struct_size before using these
   * (offsetof(bonsai_model_desc, rope_magnitude) + sizeof(float)). A 1.0
   * plugin never sees them, so the host runs scaled-RoPE models on such a
   * plugin through matmul() (docs/abi.md). --- */
  /* head_dim / 2 angle rates: pair i of every head (values i and i +
   * head_dim/2) rotates by pos * rope_inv_freq[i] radians. NULL means plain
   * RoPE, rope_freq_base^(-2i/head_dim). The host passes the rates of a
   * scaled RoPE (linear, YaRN: docs/formats.md); double, since angles reach
   * thousands of radians. Borrowed for bind_model, which copies them. */
  const double *rope_inv_freq;
  /* Factor on cos and sin of every rotation (YaRN's 1 + 0.1 ln(factor));
   * 0 means 1. */
  float rope_magnitude;
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
/* Extensions (ABI 1.1)                                                     */
/* ------------------------------------------------------------------------ */

/* Capabilities past the core table are offered as a chain of extensions
 * hanging off bonsai_backend_api.extensions, so later ones need no new major
 * version. Every extension struct begins with this header. A host walks the
 * chain, uses the types it knows (checking struct_size before reading a
 * field) and skips the rest. The chain is static storage of the plugin. */
typedef enum bonsai_extension_type {
  BONSAI_EXTENSION_SEQUENCES = 1,  /* bonsai_sequences_extension: KV slots, multi-sequence steps */
  BONSAI_EXTENSION_LAYER_KINDS = 2 /* bonsai_layer_kinds_extension (ABI 1.2): hybrid models */
} bonsai_extension_type;

typedef struct bonsai_extension {
  uint32_t struct_size;                /* sizeof the whole extension struct this header begins */
  uint32_t type;                       /* a bonsai_extension_type; unknown types are skipped */
  const struct bonsai_extension *next; /* next extension of the chain, or NULL */
} bonsai_extension;

/* The part of a multi-sequence step that belongs to one sequence. */
typedef struct bonsai_sequence_step {
  uint32_t struct_size;     /* sizeof(bonsai_sequence_step) of the host */
  int32_t slot;             /* the sequence's KV slot (0 = the context's own cache) */
  int32_t n_tokens;         /* >= 1; slot length + n_tokens <= max_context */
  const int32_t *token_ids; /* n_tokens ids in [0, n_vocab) */
  /* n_tokens RoPE positions; positions[i] must equal the slot's length + i,
   * as in bonsai_step_desc. */
  const int32_t *positions;
} bonsai_sequence_step;

/* One step that advances several independent sequences at once: the weights
 * are read once for all their tokens. Any mix is allowed, e.g. a prefill
 * chunk of one sequence beside single decode tokens of others. */
typedef struct bonsai_batch_step_desc {
  uint32_t struct_size; /* sizeof(bonsai_batch_step_desc) of the host */
  int32_t n_sequences;  /* >= 1; each slot at most once */
  /* n_sequences entries. The reader steps by sequences[0].struct_size bytes
   * (every entry's struct_size must be the same), as with layers. The step's
   * tokens are the entries' tokens in this order: lm_head's first_token
   * counts through them (entry 0's tokens first). The total is 1..max_batch. */
  const bonsai_sequence_step *sequences;
} bonsai_batch_step_desc;

/* BONSAI_EXTENSION_SEQUENCES: a context holds several KV caches ("slots"),
 * one per sequence, and a step may advance any set of them. Slot 0 is the
 * context's own cache, the one kv_reset/kv_truncate/kv_length and begin_step
 * use; it always exists and cannot be freed. Every function needs a bound
 * model (BAD_STATE before bind_model; binding again frees every other slot)
 * and discards an open step, except slot_length. */
typedef struct bonsai_sequences_extension {
  bonsai_extension header; /* type BONSAI_EXTENSION_SEQUENCES */
  /* Most slots one context holds at once, slot 0 included (>= 1). */
  int32_t max_slots;

  /* Makes an empty slot with room for max_context positions and writes its
   * id (> 0) to *slot. OUT_OF_MEMORY when its cache cannot be allocated,
   * INVALID_ARGUMENT when max_slots are in use. Ids of freed slots may be
   * given out again. */
  bonsai_status (*slot_create)(bonsai_context *ctx, int32_t *slot);

  /* Frees a slot made by slot_create and its cache. */
  bonsai_status (*slot_free)(bonsai_context *ctx, int32_t slot);

  /* Keeps the slot's first n_keep positions (0 <= n_keep <= its length). */
  bonsai_status (*slot_truncate)(bonsai_context *ctx, int32_t slot, int32_t n_keep);

  /* Makes slot `to` hold the first n_positions positions of slot `from`
   * (a shared prompt prefix): afterwards `to`'s length is n_positions and
   * its next step continues from there. 0 <= n_positions <= from's length;
   * from != to. */
  bonsai_status (*slot_copy)(bonsai_context *ctx, int32_t from, int32_t to, int32_t n_positions);

  /* Writes the number of positions in the slot's cache to *length. */
  bonsai_status (*slot_length)(const bonsai_context *ctx, int32_t slot, int32_t *length);

  /* Starts a multi-sequence step. The rest of the step is the usual protocol:
   * encode_layer for every layer, lm_head (first_token counts through the
   * batch's tokens), end_step, which grows every listed slot by its
   * n_tokens. A step left open is discarded, as with begin_step. Results for
   * each sequence equal those of stepping it alone, within the kernels'
   * tolerance (docs/abi.md). */
  bonsai_status (*begin_batch)(bonsai_context *ctx, const bonsai_batch_step_desc *batch);
} bonsai_sequences_extension;

/* ------------------------------------------------------------------------ */
/* Layer kinds and recurrent state (ABI 1.2)                                */
/* ------------------------------------------------------------------------ */

/* What mixes information across positions in one layer (the part before the
 * MLP). bind_model's description is qwen3's, where every layer is attention;
 * a layered model (bind_layered_model) names each layer's mixer, so a hybrid
 * architecture is a list of kinds and a later one adds a kind, not an entry
 * point (docs/abi.md, "Layer kinds"). */
typedef enum bonsai_mixer_kind {
  /* qwen35 full attention; mixer is a bonsai_gated_attention_mixer */
  BONSAI_MIXER_GATED_ATTENTION = 1,
  /* qwen35 gated DeltaNet, a recurrent layer; mixer is a bonsai_gated_delta_net_mixer */
  BONSAI_MIXER_GATED_DELTA_NET = 2
} bonsai_mixer_kind;

/* Gated attention (docs/models.md): per-head RMS-normed queries and keys,
 * NeoX RoPE on the first n_rot values of each head, causal grouped attention
 * with scale 1/sqrt(head_dim), each head's output times sigmoid(gate). */
typedef struct bonsai_gated_attention_mixer {
  uint32_t struct_size; /* sizeof(bonsai_gated_attention_mixer) of the host */
  int32_t n_head;       /* query heads */
  int32_t n_head_kv;    /* key/value heads; n_head % n_head_kv == 0 */
  int32_t head_dim;     /* per-head size (even) */
  int32_t n_rot;        /* leading values of a head that RoPE turns: even, 2..head_dim */
  float rope_magnitude; /* factor on cos and sin (YaRN); 0 means 1 */
  /* n_rot / 2 angle rates: pair i (values i and i + n_rot/2) turns by
   * pos * rope_inv_freq[i] radians. Borrowed for bind_layered_model. */
  const double *rope_inv_freq;
  /* 2 * n_head * head_dim rows of n_embd: for head h, rows 2*head_dim*h ...
   * are its query and the next head_dim rows its output gate. */
  const bonsai_weight *wq;
  const bonsai_weight *wk;     /* n_head_kv * head_dim rows */
  const bonsai_weight *wv;     /* n_head_kv * head_dim rows */
  const bonsai_weight *q_norm; /* head_dim: RMSNorm weight of every query head */
  const bonsai_weight *k_norm; /* head_dim: RMSNorm weight of every key head */
  const bonsai_weight *wo;     /* n_embd rows of n_head * head_dim */
} bonsai_gated_attention_mixer;

/* Gated DeltaNet (docs/models.md): with H_k q/k heads and H_v value heads of
 * head_dim d, m = qkv x feeds a causal depthwise conv of width conv_kernel
 * and SiLU; q and k heads are L2-normed (eps on the sum of squares); value
 * head h reads q/k head h mod H_k and keeps a d x d state S updated per token
 * by S <- e^g S, S += k (beta (v - S^T k))^T, o = S^T q / sqrt(d), with
 * beta = sigmoid(beta x) and g = softplus(alpha x + dt_bias) * a; the
 * output is RMSNorm(o) * norm * SiLU(gate x), then out. The last
 * conv_kernel - 1 conv inputs and every S are the sequence's recurrent
 * state. */
typedef struct bonsai_gated_delta_net_mixer {
  uint32_t struct_size;         /* sizeof(bonsai_gated_delta_net_mixer) of the host */
  int32_t conv_kernel;          /* K, the conv's width (>= 1) */
  int32_t n_k_heads;            /* H_k, q/k heads */
  int32_t n_v_heads;            /* H_v, value heads; a multiple of H_k */
  int32_t head_dim;             /* d, every q/k/v head's size */
  int32_t reserved;             /* 0 */
  const bonsai_weight *qkv;     /* 2*H_k*d + H_v*d rows of n_embd: q | k | v channels */
  const bonsai_weight *gate;    /* H_v * d rows of n_embd: z */
  const bonsai_weight *beta;    /* H_v rows of n_embd: write strength logits */
  const bonsai_weight *alpha;   /* H_v rows of n_embd: decay logits */
  const bonsai_weight *conv;    /* one row of K taps per channel; tap K-1 takes the newest */
  const bonsai_weight *dt_bias; /* H_v values */
  const bonsai_weight *a;       /* H_v values, <= 0 (the file's -exp(A_log)) */
  const bonsai_weight *norm;    /* d values: the output RMSNorm weight of every head */
  const bonsai_weight *out;     /* n_embd rows of H_v * d */
} bonsai_gated_delta_net_mixer;

/* One layer of a layered model: x += mixer(RMSNorm(x) * attn_norm), then
 * x += w_down(silu(w_gate h) * w_up h) with h = RMSNorm(x) * ffn_norm. */
typedef struct bonsai_layer_desc {
  uint32_t struct_size;           /* sizeof(bonsai_layer_desc) of the host */
  uint32_t mixer_kind;            /* a bonsai_mixer_kind */
  const void *mixer;              /* the kind's struct; it begins with its own struct_size */
  const bonsai_weight *attn_norm; /* RMSNorm before the mixer, n_embd */
  const bonsai_weight *ffn_norm;  /* RMSNorm before the MLP, n_embd */
  const bonsai_weight *w_gate;    /* n_ff rows of n_embd */
  const bonsai_weight *w_up;      /* n_ff rows of n_embd */
  const bonsai_weight *w_down;    /* n_embd rows of n_ff */
} bonsai_layer_desc;

typedef struct bonsai_layered_model_desc {
  uint32_t struct_size;             /* sizeof(bonsai_layered_model_desc) of the host */
  int32_t n_embd;                   /* hidden size */
  int32_t n_layer;                  /* layers */
  int32_t n_ff;                     /* MLP inner size */
  int32_t n_vocab;                  /* rows of token_embd and lm_head */
  float rms_eps;                    /* epsilon of every RMSNorm and L2 norm */
  const bonsai_weight *token_embd;  /* n_vocab rows of n_embd */
  const bonsai_weight *output_norm; /* final RMSNorm, n_embd */
  const bonsai_weight *lm_head;     /* n_vocab rows of n_embd; == token_embd when tied */
  /* n_layer entries, stepped by layers[0].struct_size bytes as with
   * bonsai_model_desc; they and their mixers are copied by the bind. */
  const bonsai_layer_desc *layers;
} bonsai_layered_model_desc;

/* BONSAI_EXTENSION_LAYER_KINDS. A context binds either a qwen3 model
 * (bind_model) or a layered one; binding again replaces it. Everything else
 * is the usual protocol: begin_step or begin_batch, encode_layer per layer,
 * lm_head, end_step, and the kv_* and slot_* functions, where each slot (the
 * context's own cache too) holds, beside its KV cache, the recurrent state
 * of its sequence: zero at length 0.
 *
 * A recurrent state describes all of a sequence's positions at once and
 * cannot be cut back. The rules:
 *  - A step that is never ended leaves the state as it was, as it leaves
 *    the KV length.
 *  - kv_reset, and truncating to 0, zero the state.
 *  - kv_truncate, slot_truncate and slot_copy to 0 < n < length cut the KV
 *    cache but leave the state behind: the slot refuses steps (BAD_STATE)
 *    until a checkpoint is restored onto it. slot_copy of a whole slot
 *    (n == from's length) copies the state too.
 *    A whole-slot copy of a slot whose state is behind leaves the copy
 *    behind too.
 *  - A checkpoint is a copy of one slot's state at its length. It belongs to
 *    the context, not the slot: it outlives slot_free of its source and can
 *    be restored onto any slot. Restoring it onto a slot whose first
 *    positions hold the same tokens (the host's duty: the plugin cannot
 *    check) sets that slot's state and cuts its length to the checkpoint's
 *    position, so it steps on from there. Ids may be given out again after a
 *    checkpoint is freed or the model bound again.
 *  - checkpoint_save and checkpoint_restore discard an open step when they
 *    succeed; when they fail they change nothing.
 * A model without recurrent layers has a state of 0 bytes; every rule then
 * reduces to ABI 1.1's.
 *
 * Later minor versions: a host sets a field appended to these structs after
 * 1.2 to anything but zero only for a plugin whose abi_minor has that field
 * (an older plugin would not read it), and a new mixer kind only after
 * supports_mixer accepted it. Reserved fields must be 0; a plugin refuses
 * other values (INVALID_ARGUMENT), so they can be given a meaning later. */
typedef struct bonsai_layer_kinds_extension {
  bonsai_extension header; /* type BONSAI_EXTENSION_LAYER_KINDS */

  /* OK when bind_layered_model accepts layers of this bonsai_mixer_kind,
   * UNSUPPORTED when not. Needs no context; callable at any time, so a host
   * can choose a plugin before it loads a model. */
  bonsai_status (*supports_mixer)(uint32_t mixer_kind);

  /* Binds a layered model: validates shapes, copies the description and
   * allocates activations for max_batch tokens, the KV cache of its
   * attention layers for max_context positions and one recurrent state.
   * UNSUPPORTED when a layer's kind is not supported (the host then runs
   * the layers itself through matmul). */
  bonsai_status (*bind_layered_model)(bonsai_context *ctx, const bonsai_layered_model_desc *model);

  /* Writes the bytes of one sequence's recurrent state (what one checkpoint
   * holds) to *bytes: 0 without recurrent layers. Needs a bound model. */
  bonsai_status (*state_bytes)(const bonsai_context *ctx, uint64_t *bytes);

  /* Copies slot `slot`'s recurrent state (0 = the context's own cache) and
   * writes the new checkpoint's id (> 0) to *checkpoint. OUT_OF_MEMORY when
   * the copy cannot be allocated; BAD_STATE when the slot's state is behind
   * its length. Discards an open step. */
  bonsai_status (*checkpoint_save)(bonsai_context *ctx, int32_t slot, int32_t *checkpoint);

  /* Restores a checkpoint onto `slot`: its length becomes the checkpoint's
   * position (INVALID_ARGUMENT when the slot is shorter) and its state the
   * saved one. The checkpoint stays. Discards an open step. */
  bonsai_status (*checkpoint_restore)(bonsai_context *ctx, int32_t checkpoint, int32_t slot);

  /* Frees a checkpoint. Binding a model again frees all of them. */
  bonsai_status (*checkpoint_free)(bonsai_context *ctx, int32_t checkpoint);

  /* Writes a checkpoint's position (the length of the slot it was saved
   * from) to *position. */
  bonsai_status (*checkpoint_position)(const bonsai_context *ctx, int32_t checkpoint,
                                       int32_t *position);
} bonsai_layer_kinds_extension;

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

  /* The message of the last call on ctx if it failed; "" when it succeeded
   * (or none was made). The text stays valid until the next call on ctx.
   * Never NULL for a valid ctx. */
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

  /* --- Added in ABI 1.1: a host reads this only when struct_size covers it
   * (a 1.0 table ends at kv_length). --- */

  /* The first extension of the plugin's chain, or NULL for none. */
  const bonsai_extension *extensions;
} bonsai_backend_api;

/* The first extension of `type` in a plugin's table, or NULL when it offers
 * none: a table of ABI 1.0 (shorter than `extensions`) has none. The caller
 * still checks the extension's struct_size before reading a field added to
 * it later. */
static inline const bonsai_extension *bonsai_find_extension(const bonsai_backend_api *api,
                                                            uint32_t type) {
  const bonsai_extension *e;
  if (api == NULL ||
      api->struct_size < offsetof(bonsai_backend_api, extensions) + sizeof(api->extensions))
    return NULL;
  for (e = api->extensions; e != NULL; e = e->next)
    if (e->type == type)
      return e;
  return NULL;
}

/* The entry point's type. Returns the plugin's table (static storage, valid
 * while the library is loaded) or NULL when the plugin cannot serve a host
 * of host_abi_major. The host checks abi_major itself too. */
typedef const bonsai_backend_api *(*bonsai_backend_get_api_fn)(uint32_t host_abi_major,
                                                               uint32_t host_abi_minor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BONSAI_BACKEND_H */

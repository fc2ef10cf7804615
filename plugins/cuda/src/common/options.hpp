#pragma once
// Context options from bonsai_context_desc::options ("key=value;key=value").
#include <cstdint>
#include <string>
#include <vector>

#include "tuning_options.hpp"

namespace bonsai::cuda {

// Option decode: which steps run on the persistent decode kernel.
enum class DecodeMode { automatic, graph, persistent };

// Whether the persistent kernel serves a device of compute capability
// `compute_major` under `mode` (it is built only then).
inline bool persistent_decode_wanted(DecodeMode mode, int compute_major) {
  return mode == DecodeMode::persistent || (mode == DecodeMode::automatic && compute_major >= 9);
}

struct ContextOptions {
  // "reference": every launch issued one by one (no CUDA graph) and every
  // matmul in f32 on CUDA cores, the plain path to compare against. "auto"
  // (default): decode steps replay a captured CUDA graph, their Q1_0/Q2_0
  // matmuls use int8 activations (dp4a), and prefill of Q1_0/Q2_0 runs on
  // tensor cores (int8 on 8.0+, f16 inputs with f32 sums on 7.x).
  bool use_graphs = true;
  bool tensor_cores = true; // tensor_cores=on|off; off under kernels=reference
  bool int8_gemv = true;    // int8_gemv=on|off; off under kernels=reference
  // prefill=int8|f16: the tensor-core prefill GEMM on 8.0+ devices. int8
  // (default): activations quantized to int8 per 32 values, int8 MMAs, no
  // f16 overflow; f16: the 7.x kernel (f16 inputs, f32 sums), kept to
  // compare on a GPU. Below 8.0 the f16 kernel runs either way.
  bool prefill_int8 = true;
  // int8_input=token|block: where the int8 GEMVs' input is quantized. token
  // (default): once per input row by its own launch, each GEMV block copies
  // the result; block: every GEMV block quantizes the f32 row itself (no
  // extra launch, more L2 reads). Kept to compare the two on a GPU.
  bool int8_input_per_token = true;
  // kv=f16|f32: the KV cache's element. f16 halves the bytes attention
  // reads per key; f32 (default) keeps the golden top-1 gate on the tiny
  // models, whose near-tied logits an f16 cache flips (docs/cuda.md).
  bool kv_f16 = false;
  // pdl=on|off: programmatic dependent launch (sm_90+): each kernel may
  // start while the one before it finishes, fetching its weights before it
  // waits. Off by default: slower on an H200 (docs/cuda.md).
  bool programmatic_launch = false;
  // decode=auto|persistent|graph: how steps of up to 8 tokens run their
  // layers. graph: a launch per operation, single-token steps of slot 0
  // replayed as a CUDA graph. persistent: every layer in one launch of
  // kernels/persistent.cuh (Q1_0/Q2_0 models; others keep graph). auto
  // (default): what measured faster on Hopper (docs/cuda.md): persistent
  // for steps of 2 to 8 tokens (several sequences, short prompts) and for
  // single tokens from persistent_single_from on, graph for the others;
  // graph only before sm_90, where nothing was measured. graph under
  // kernels=reference.
  DecodeMode decode = DecodeMode::automatic;
  // persistent_single_from=N: under decode=auto, the context length (1 or
  // more) from which single-token steps take the persistent kernel. -1
  // (default): from the first position, at every width (faster than the
  // graph path at every shape and length measured on an H200, docs/cuda.md).
  int persistent_single_from = -1;
  // prefill_attention=tc|cores: the attention of steps of 9 or more tokens
  // on f16 tensor cores (tc, default on 8.0+; kernels/attention_tc.cuh) or
  // on CUDA cores (the split kernels decode uses). Off with tensor_cores=off
  // and under kernels=reference.
  bool attention_tc = true;
  // persistent_keys_per_range=N: a persistent step cuts each (sequence, KV
  // head)'s attention into only as many key ranges as give each at least N
  // cached keys (a power of two, at most the default count). 0 (default):
  // the ranges that give every block one attention instruction, whatever
  // the context, which at short contexts leaves ranges of a few keys and
  // the last one's merge on the critical path.
  int persistent_keys_per_range = 0;
  // persistent_records=shared|registers: where a persistent single-token
  // step's row dots read the input records from. shared (default): from
  // shared memory for every row, 144 bytes per 16-byte weight chunk.
  // registers: each lane holds its columns' records in registers for all
  // the rows of an instruction, and a warp reduces 32 sums at once.
  bool persistent_held_records = false;
  // persistent_deadline_ms=N: the longest a persistent decode block waits
  // for another before the launch gives up and reports where it stalled.
  int persistent_deadline_ms = 1000;
  // persistent_quantize=consumer|producer: who turns a persistent stage's
  // f32 input into int8 records. producer (default, faster at every step
  // size on an H200, docs/cuda.md): the instruction that completes a
  // 128-row group of a stage's output quantizes that group once, and the
  // readers copy the records. consumer: every instruction quantizes the
  // whole input row after its wait.
  bool persistent_producer_quantize = true;
  // persistent_matmul=dp4a|mma: how a persistent step of 2 or more tokens
  // multiplies. mma (default; compute capability 8.0+, elsewhere dp4a with
  // an info line): the int8 tensor cores, the step's tokens as the MMA's 8
  // columns, 1.1-1.7x dp4a at 2-8 tokens on an H200 (producer-quantized).
  // dp4a: every token's row dots apart, a weight chunk in registers reused
  // across them; single tokens under decode=persistent ran faster with it,
  // most likely for its larger weight buffer. Single tokens always multiply
  // with dp4a.
  bool persistent_mma = true;
  // persistent_head=on|off: the LM head and the greedy argmax run in the
  // persistent launch, after the last layer (on, default, where the head
  // has the layers' type), so that a step needs no launch after it; or
  // launch by launch after it (off). With it, a step's logits are worked out
  // for all its tokens whether or not the host asks for them.
  bool persistent_head = true;
  // persistent_prefetch=off|next: with next, each persistent block asks L2
  // for the weights of its next matmul instruction before it waits for the
  // current one's inputs, so that HBM streams one stage ahead and the copy
  // into shared memory after the wait reads L2. off (default) until an
  // H200 run says which is faster (scripts/gpu-check.sh, section paths).
  bool persistent_prefetch = false;
  // persistent_trace=PATH: every persistent decode launch notes when each
  // instruction started, stopped waiting, had its inputs, finished and
  // signalled; after each step PATH gets the table of where a layer's time
  // went (averaged over the steps so far) and PATH.csv the last launch's
  // marks. Costs a synchronization and a copy per step: for diagnosis only.
  std::string persistent_trace;
  TuningOptions tuning;  // tune=, tune_budget_ms= (tuning_options.hpp)
  bool ptx_cache = true; // ptx_cache=off disables the disk cache
  // upload_chunk_kib=N: each of the two pinned buffers weights are staged
  // through on their way to the device (16 MiB by default; less where pinned
  // memory is scarce, 1..1048576).
  uint64_t upload_chunk_bytes = uint64_t{16} << 20;
  std::vector<std::string> warnings; // unknown keys, malformed entries
};

// Throws PluginError(INVALID_ARGUMENT) for a bad value of a known key.
ContextOptions parse_options(const char *options);

} // namespace bonsai::cuda

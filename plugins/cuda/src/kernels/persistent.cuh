// Persistent decode (option decode=persistent): every layer of a step of up
// to PK_MAX_TOKENS tokens in one launch. One block per SM walks an
// instruction list built on the host (persistent_plan.cpp): block b runs
// instructions b, b + gridDim.x, ... in order. An instruction is one piece of
// a layer (a range of 16-row tiles of a matmul, or the attention of one
// sequence and KV head); it waits until a counter in global memory shows that
// the instructions it reads from are done, and adds one to its own counter
// when it is. The list is in dependency order, so the lowest unfinished
// instruction can always run: no deadlock, and no grid-wide barrier.
//
// Weights: a matmul instruction first starts copying its weights (the
// codes and scales of its rows, a few tens of KB) into a buffer in shared
// memory with cp.async, then waits for its inputs, so the copy overlaps the
// wait, and all of it is in flight at once; the row dots then read shared
// memory. With persistent_prefetch=next it also asks L2 for the weights of
// its next matmul instruction before the wait, so that HBM streams a stage
// ahead.
//
// Memory ordering: outputs other blocks read are written with pk_store.
// A producer's threads store, meet at a block barrier, then thread 0 fences
// (cumulative: it publishes the whole block's stores) and adds to the
// counter; a consumer's thread 0 loads the counter with acquire semantics,
// then the block meets at a barrier. The kernel emulator holds a block's
// pk_stores back until that block fences, so a missing fence, a missing wait
// or a wrong count gives wrong numbers there (tests/cuda/persistent_*).
//
// With an LM head (PersistentArgs::n_vocab > 0), the list ends with its
// rows as one more matmul stage after the last layer, which also keeps each
// range's best row per token, and one argmax instruction that picks every
// token's best over the ranges: a greedy step needs no other launch.
//
// With a trace buffer (option persistent_trace), thread 0 notes five times
// per instruction (PK_MARK_*), so that the host can say where a step's time
// goes: waiting, staging inputs, computing, or publishing.
//
// A wait that lasts longer than the launch's deadline (globaltimer) records
// where it stalled in PkStatus and raises its abort flag; every other wait
// sees the flag and the whole grid returns, so a lost update costs one
// deadline, not a hung GPU. The host reads PkStatus after the step.
//
// Needs kernels/int8_input.cuh, kernels/gemv_dp4a.cuh and
// kernels/int8_mma.cuh before it (the int8 records, the dp4a row dots and
// the int8 MMA). Uses dynamic shared memory only: the emulator runs the
// blocks of this kernel concurrently, and a static __shared__ array would be
// one for all of them there.
//
// The kernel is in the files below, in this order (each needs those before
// it). NVRTC gets their text in place of these lines (plugins/cuda/
// CMakeLists.txt inlines a kernel file's #include of another .cuh); the
// emulator and the fake driver compile them as they are.
//   persistent_args.cuh       limits, the instruction and its records, PersistentArgs
//   persistent_hooks.cuh      loads, fences, signals and clocks: PTX, or the emulator's hooks
//   persistent_shared.cuh     the dynamic shared memory's layout and sizes
//   persistent_handoff.cuh    wait, signal, trace marks: the protocol between instructions
//   persistent_head.cuh       the LM head's best rows and the argmax instruction
//   persistent_weights.cuh    a matmul's pieces, their copy and their prefetch to L2
//   persistent_inputs.cuh     inputs quantized by the reader, or once by their producer
//   persistent_rows.cuh       row dots with dp4a (every token; one token from registers)
//   persistent_rows_mma.cuh   row dots on the int8 tensor cores (2-8 tokens)
//   persistent_matmul.cuh     a matmul instruction after its wait
//   persistent_attention.cuh  QK-norm, RoPE, KV append, attention and its merge
//   persistent_fused.cuh      a KV head's Q/K/V share and its attention in one (persistent_qkv)
//   persistent_kernel.cuh     the instruction loop and the entry points
// clang-format off
#include "persistent_args.cuh"
#include "persistent_hooks.cuh"
#include "persistent_shared.cuh"
#include "persistent_handoff.cuh"
#include "persistent_head.cuh"
#include "persistent_weights.cuh"
#include "persistent_inputs.cuh"
#include "persistent_rows.cuh"
#include "persistent_rows_mma.cuh"
#include "persistent_matmul.cuh"
#include "persistent_attention.cuh"
#include "persistent_fused.cuh"
#include "persistent_kernel.cuh"
// clang-format on

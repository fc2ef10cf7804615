#pragma once
// Everything a context owns: options, the task arena its work runs on, the
// kernel set, its weights, the bound model with KV cache and the step state.
// Nothing lives outside a context (no global mutable state).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/tbb/task_arena.h>

#include "bonsai/bonsai_backend.h"
#include "kernels/kernel_set.hpp"
#include "logger.hpp"
#include "matmul.hpp"
#include "model.hpp"
#include "options.hpp"
#include "weight.hpp"

namespace bonsai::cpu {

inline constexpr uint64_t kContextMagic = 0x4350552d62736169ull; // tags live contexts

// One sequence's share of the open step: tokens [first_token, first_token +
// n_tokens) of the step, appended to `kv` from position first_pos.
struct StepSequence {
  KvCache *kv = nullptr;
  int first_token = 0;
  int n_tokens = 0;
  int32_t first_pos = 0;
};

// Where the open step stands in begin -> encode x n_layer -> lm_head -> end.
struct StepState {
  bool open = false;
  bool failed = false; // an encode failed: only begin_step may follow
  int n_tokens = 0;    // of all sequences together
  int next_layer = 0;
  std::vector<StepSequence> sequences; // one for begin_step, several for begin_batch
  std::vector<int32_t> token_ids;      // [n_tokens], the sequences' tokens in order
  std::vector<int32_t> positions;      // [n_tokens]

  // Back to "no step open", keeping the vectors' storage.
  void close() {
    open = failed = false;
    n_tokens = next_layer = 0;
    sequences.clear();
    token_ids.clear();
    positions.clear();
  }
};

struct Context {
  uint64_t magic = kContextMagic;
  int max_context = 0;
  int max_batch = 0;
  int n_threads = 0;
  Logger log;
  const KernelSet *kernels = nullptr;
  KvChoice kv_choice = KvChoice::F32; // checked against the model in bind_model
  std::unique_ptr<oneapi::tbb::task_arena> arena;
  std::unordered_map<const Weight *, std::unique_ptr<Weight>> weights;
  std::unique_ptr<BoundModel> model;
  StepState step;
  ActScratch matmul_scratch; // for matmul() calls outside a step
  mutable std::string last_error;

  // The weight behind a host handle, or nullptr when it is not one of ours
  // (never dereferences the handle).
  const Weight *find_weight(const bonsai_weight *handle) const;
  MatmulRunner runner() { return MatmulRunner(*arena, *kernels); }
};

// Closes an open step (the KV and slot calls discard it).
inline void discard_step(Context &ctx) {
  ctx.step.close();
}

// A weight for this context from an upload descriptor, in 32-row tiles
// where the context's kernel set reads its type that way. Throws PluginError.
inline std::unique_ptr<Weight> new_weight(Context &ctx, const bonsai_weight_desc &desc) {
  std::unique_ptr<Weight> w = make_weight(desc);
  const TiledKernel &tiled = ctx.kernels->tiled[static_cast<int>(weight_kind(w->type))];
  if (tiled.rows != nullptr)
    tile_weight(*w, tiled.format, *ctx.arena);
  return w;
}

// Builds a context from a size-checked descriptor. Throws PluginError.
std::unique_ptr<Context> make_context(const bonsai_context_desc &desc);

} // namespace bonsai::cpu

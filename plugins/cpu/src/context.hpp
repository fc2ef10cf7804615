#pragma once
// Everything a context owns: options, the task arena its work runs on, the
// kernel set, its weights, the bound model with KV cache and the step state.
// Nothing lives outside a context (no global mutable state).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include <oneapi/tbb/task_arena.h>

#include "bonsai/bonsai_backend.h"
#include "kernels/kernel_set.hpp"
#include "logger.hpp"
#include "matmul.hpp"
#include "model.hpp"
#include "weight.hpp"

namespace bonsai::cpu {

inline constexpr uint64_t kContextMagic = 0x4350552d62736169ull; // tags live contexts

// Where the open step stands in begin -> encode x n_layer -> lm_head -> end.
struct StepState {
  bool open = false;
  bool failed = false; // an encode failed: only begin_step may follow
  int n_tokens = 0;
  int next_layer = 0;
};

struct Context {
  uint64_t magic = kContextMagic;
  int max_context = 0;
  int max_batch = 0;
  int n_threads = 0;
  Logger log;
  const KernelSet *kernels = nullptr;
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

// Builds a context from a size-checked descriptor. Throws PluginError.
std::unique_ptr<Context> make_context(const bonsai_context_desc &desc);

inline Context *to_context(bonsai_context *c) {
  return reinterpret_cast<Context *>(c);
}
inline const Context *to_context(const bonsai_context *c) {
  return reinterpret_cast<const Context *>(c);
}
inline bonsai_context *to_handle(Context *c) {
  return reinterpret_cast<bonsai_context *>(c);
}
inline bonsai_weight *to_handle(Weight *w) {
  return reinterpret_cast<bonsai_weight *>(w);
}

} // namespace bonsai::cpu

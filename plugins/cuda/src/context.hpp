#pragma once
// Everything a context owns: device, kernels, PTX cache, weights, the bound
// model with its KV cache, and the state of the open step. Nothing lives
// outside a context except the process-wide driver/NVRTC handles.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "device.hpp"
#include "kernels.hpp"
#include "logger.hpp"
#include "model.hpp"
#include "options.hpp"
#include "ptx_cache.hpp"
#include "tune_setup.hpp"
#include "weight.hpp"

namespace bonsai::cuda {

inline constexpr uint64_t kContextMagic = 0x43554441626e7361ull; // tags live contexts

// One sequence's share of the open step: tokens [first_token, first_token +
// n_tokens) of the step, appended to `slot` from its current length.
struct StepSequence {
  KvSlot *slot = nullptr;
  int first_token = 0;
  int n_tokens = 0;
};

// Where the open step stands in begin -> encode x n_layer -> lm_head -> end.
struct StepState {
  bool open = false;
  bool failed = false;             // an encode failed: only begin_step may follow
  bool use_graph = false;          // this step replays the decode graph
  bool persistent = false;         // this step's layers are one persistent launch
  PersistentVariant variant;       // ...run this way (decode_choice.hpp)
  bool head_in_launch = false;     // ...whose LM head and argmax gave every token's logits
  bool persistent_checked = false; // its stall status has been read
  int n_tokens = 0;                // of all sequences together
  int next_layer = 0;
  std::vector<StepSequence> sequences; // one for begin_step, several for begin_batch
  std::vector<int32_t> token_ids;      // [n_tokens], the sequences' tokens in order
  // {kv_length, n_tokens} per sequence: the source of the step_info upload,
  // kept until the copy has completed.
  std::vector<int32_t> host_info;
};

struct Context {
  uint64_t magic = kContextMagic;
  int max_context = 0;
  int max_batch = 0;
  Logger log;
  ContextOptions options;
  // Declared first, destroyed last: everything below frees device memory.
  std::unique_ptr<Device> device;
  std::unique_ptr<PtxCache> cache;
  std::unique_ptr<Kernels> kernels;
  std::unique_ptr<UploadStager> stager; // weight uploads; before the weights it copies into
  std::unordered_map<const Weight *, std::unique_ptr<Weight>> weights;
  std::unique_ptr<BoundModel> model;
  StepState step;
  TuneSetup tuner; // the decode tuner's keys, stamp, cache and clock (tuner.hpp)
  DeviceBuffer matmul_x, matmul_y, matmul_int8; // scratch for matmul(), grown on demand
  mutable std::string last_error;

  // The weight behind a host handle, or nullptr when it is not one of ours
  // (never dereferences the handle).
  const Weight *find_weight(const bonsai_weight *handle) const;
  // Frees every device object (with the device's context current).
  void release_device_objects();
};

// Closes an open step (the KV and slot calls discard it), first waiting for
// the kernels it queued: they may still use a cache about to change or go.
void discard_step(Context &ctx);

// A weight uploaded to this context's device. Throws PluginError.
inline std::unique_ptr<Weight> new_weight(Context &ctx, const bonsai_weight_desc &desc) {
  return std::make_unique<Weight>(upload_weight(*ctx.device, *ctx.stager, desc));
}

// Creates a context: loads the driver, checks the device, compiles or loads
// the kernels. Throws PluginError (NO_DEVICE with the reason when there is
// no usable device).
std::unique_ptr<Context> make_context(const bonsai_context_desc &desc);

} // namespace bonsai::cuda

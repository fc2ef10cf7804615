#pragma once
// What decode=persistent keeps per bound model: the kernel's name and launch
// shape, the layer table and instruction lists on the device, the counters
// and stall status the kernel writes, and a pinned copy of that status.
// kernels/persistent.cuh is the kernel; common/persistent_plan.* the list.
#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decode_choice.hpp"
#include "device.hpp"
#include "persistent_plan.hpp"
#include "persistent_trace.hpp"

namespace bonsai::cuda {

// PkStatus of kernels/persistent_args.cuh.
struct PersistentStatus {
  int32_t abort = 0; // 1: a wait passed the deadline
  int32_t block = 0, instr = 0, counter = 0, observed = 0, target = 0;
  int32_t reserved[2] = {};
};
static_assert(sizeof(PersistentStatus) == 32, "must match PkStatus in kernels/persistent_args.cuh");

// Page-locked host memory for one PersistentStatus, so that its copy from
// the device can be queued behind the kernel without a wait.
class PinnedStatus {
public:
  explicit PinnedStatus(const Device &device);
  ~PinnedStatus();
  PinnedStatus(const PinnedStatus &) = delete;
  PinnedStatus &operator=(const PinnedStatus &) = delete;
  PersistentStatus *get() const { return status_; }

private:
  const Device &device_;
  PersistentStatus *status_ = nullptr;
  bool pinned_ = false; // false: ordinary memory (the copy then waits)
};

// One instruction list (per PersistentPlanKey: sequences, tokens and key
// ranges of a step, and whether the LM head is in it) on the device.
struct PersistentPlanBuffer {
  std::vector<PersistentInstr> host; // for stall reports
  DeviceBuffer device;
  // The weight buffer its matmul ranges were cut for: what shared memory
  // leaves beside the work area of a step of its tokens. Fewer tokens leave
  // more, so fewer ranges need cutting (one token of 8B: gate/up in one
  // range per block instead of 154 ranges on 132 blocks).
  int weight_buffer_bytes = 0;
  int unit_rows = 0; // rows of its matmul units (16, or fewer with balanced shares)
  // persistent_stream: the slots the weight buffer is cut into (1: none)
  // and each one's bytes, which the matmul ranges were cut for.
  int stream_slots = 1, slot_bytes = 0;
  bool fused = false; // Q/K/V and attention in one stage (persistent_qkv=fused applied)
};

// What a step's plan depends on.
struct PersistentPlanKey {
  int sequences = 0, tokens = 0, splits = 0; // splits: attention key ranges
  bool head = false;                         // the LM head and argmax as its last stages
  bool balanced = false;                     // persistent_shares=balanced
  int stream = 1;                            // persistent_stream: weight slots
  bool fused = false;                        // persistent_qkv=fused (where it applies)
  auto operator<=>(const PersistentPlanKey &) const = default;
};

struct PersistentDecode {
  explicit PersistentDecode(const Device &device) : status(device) {}
  std::string kernel; // e.g. "bonsai_decode_persistent_q1_0"
  int max_tokens = 0; // the most tokens a step may have (their inputs fit shared memory)
  // The context length from which single-token steps run here (0 under
  // decode=persistent; under auto, persistent_single_from or the model's
  // default); shorter ones take the graph path.
  int single_from = 0;
  bool mma = false; // persistent_matmul=mma, where it applies
  // Where the LM head and argmax can run in the launch (the head has the
  // layers' type, whole tiles of rows): shape.n_vocab set, each range's best
  // rows in head_best. A launch puts them there when its variant asks.
  bool head_available = false;
  DeviceBuffer head_best;
  // Under decode=auto, the tuner's choice for steps of each number of
  // tokens (tuner.hpp), once made; until then the fixed choice.
  std::array<std::optional<DecodeChoice>, kPersistentMaxTokens + 1> tuned;
  long long deadline_ns = 0;  // persistent_deadline_ms
  PersistentShape shape;      // blocks: one per SM; n_sequences, weight buffer set per plan
  DeviceBuffer layers;        // PkLayer per layer
  DeviceBuffer control;       // the counters, the attention arrivals, then PkStatus
  size_t arrivals_offset = 0; // where the attention arrival counts start in `control` (after
                              // persistent_counter_count counters)
  size_t counter_bytes = 0;   // bytes of the counters and arrivals (a multiple of 16)
  DeviceBuffer partials;      // the split attention's per-range softmax states
  // persistent_quantize=producer (when it applies): the staged int8 rows of
  // each matmul stage (Q/K/V, output, gate/up, down) and the sums of
  // squares of the normed ones (Q/K/V, gate/up), at `staged_offsets` and
  // `sums_offsets` in `staged`, and the group row counts in `control` at
  // `group_rows_offset`.
  bool producer_quantize = false;
  int q8_groups = 0; // 128-value groups of the widest input
  DeviceBuffer staged;
  size_t staged_offsets[kPersistentStages] = {}, sums_offsets[kPersistentStages] = {};
  size_t group_rows_offset = 0;
  // persistent_qkv=fused: each layer's KV heads' ready counters in
  // `control`, after the group row counts.
  size_t head_ready_offset = 0;
  PinnedStatus status; // the last launch's status, once the step has synchronized
  // persistent_keys_per_range (0: the ranges that give every block one
  // attention instruction, whatever the context).
  int keys_per_range = 0;
  // By (sequences, tokens, key ranges) of the step: a step's tokens set its
  // weight buffer. At most 36 (sequences <= tokens <= 8) per count of key
  // ranges (one, or with keys_per_range up to 6: powers of two to 32), each
  // of about 5 instructions of 32 bytes a block a layer (8B: about 0.8 MB).
  std::map<PersistentPlanKey, PersistentPlanBuffer> plans;
  PersistentPlanKey last_plan; // the plan of the last launch
  // Option persistent_trace: the marks buffer (PK_MARKS per instruction of
  // the largest plan so far) and the launches read back from it.
  DeviceBuffer trace;
  PersistentTraceSummary trace_summary;
  bool trace_write_failed = false; // warned once
};

} // namespace bonsai::cuda

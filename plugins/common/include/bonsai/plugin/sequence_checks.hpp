#pragma once
// The sequences extension's argument rules (begin_step/begin_batch entries,
// slot_truncate, slot_copy), decided once for every plugin so their answers
// to bad input cannot drift. Each check throws PluginError
// (INVALID_ARGUMENT) with a message naming the call, the entry and the value.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::plugin {

// What one sequence of a step asks for, before it is checked: begin_step's
// single sequence (slot 0) or one entry of begin_batch.
struct SequenceRequest {
  int32_t slot = 0;
  int32_t n_tokens = 0;
  const int32_t *token_ids = nullptr;
  const int32_t *positions = nullptr;
};

// The context's and model's limits a sequence is checked against.
struct SequenceLimits {
  int max_batch = 0;
  int max_context = 0;
  int n_vocab = 0;
};

// begin_batch's entries, read with the stride of sequences[0].struct_size
// (every entry must state the same size, at least this ABI's).
inline std::vector<SequenceRequest> read_batch_requests(const bonsai_batch_step_desc &batch) {
  if (batch.n_sequences < 1)
    fail_invalid(strformat("begin_batch: n_sequences is %d; it must be >= 1", batch.n_sequences));
  if (batch.sequences == nullptr)
    fail_invalid("begin_batch: sequences is NULL");
  const uint32_t stride = batch.sequences[0].struct_size;
  if (stride < sizeof(bonsai_sequence_step))
    fail_invalid(
        strformat("begin_batch: sequences[0].struct_size is %u, smaller than the %zu bytes "
                  "of ABI %d.%d",
                  stride, sizeof(bonsai_sequence_step), BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR));
  std::vector<SequenceRequest> requests;
  const auto *bytes = reinterpret_cast<const unsigned char *>(batch.sequences);
  for (int i = 0; i < batch.n_sequences; ++i) {
    bonsai_sequence_step entry;
    std::memcpy(&entry, bytes + static_cast<size_t>(i) * stride, sizeof entry);
    if (entry.struct_size != stride)
      fail_invalid(strformat("begin_batch: sequences[%d].struct_size is %u, but "
                             "sequences[0]'s is %u; they must all be the same",
                             i, entry.struct_size, stride));
    requests.push_back({entry.slot, entry.n_tokens, entry.token_ids, entry.positions});
  }
  return requests;
}

// Checks one sequence against its slot's cached `length`, given the
// `tokens_before` it in the same step. `index` is its entry in a batch, or
// -1 for begin_step's single sequence. Whether the slot exists and appears
// once is the plugin's to check (it owns the slots).
inline void check_sequence_request(const SequenceRequest &request, int32_t length,
                                   int tokens_before, const SequenceLimits &limits,
                                   const char *call, int index) {
  // "begin_batch: sequences[2] (slot 5): " or "begin_step: ", formatted only on failure.
  const auto where = [&] {
    return index < 0 ? strformat("%s: ", call)
                     : strformat("%s: sequences[%d] (slot %d): ", call, index, request.slot);
  };
  if (request.n_tokens < 1 || request.n_tokens > limits.max_batch - tokens_before)
    fail_invalid(strformat("%sn_tokens is %d; the step's tokens must total 1..max_batch (%d)",
                           where().c_str(), request.n_tokens, limits.max_batch));
  if (int64_t{length} + request.n_tokens > limits.max_context)
    fail_invalid(strformat("%s%d tokens after %d cached positions exceed max_context %d",
                           where().c_str(), request.n_tokens, length, limits.max_context));
  if (request.token_ids == nullptr || request.positions == nullptr)
    fail_invalid(where() + "token_ids and positions must not be NULL");
  for (int i = 0; i < request.n_tokens; ++i) {
    if (request.token_ids[i] < 0 || request.token_ids[i] >= limits.n_vocab)
      fail_invalid(strformat("%stoken_ids[%d] = %d is outside the vocabulary [0, %d)",
                             where().c_str(), i, request.token_ids[i], limits.n_vocab));
    if (request.positions[i] != length + i)
      fail_invalid(strformat("%spositions[%d] = %d, but it must be the cached length + i = %d",
                             where().c_str(), i, request.positions[i], length + i));
  }
}

// kv_truncate / slot_truncate: 0 <= n_keep <= length.
inline void check_truncate(int32_t n_keep, int32_t length, const char *call) {
  if (n_keep < 0 || n_keep > length)
    fail_invalid(strformat("%s: n_keep %d is outside [0, length = %d]", call, n_keep, length));
}

// slot_copy: two different slots and 0 <= n_positions <= from's length.
inline void check_slot_copy(int32_t from, int32_t to, int32_t n_positions, int32_t from_length) {
  if (from == to)
    fail_invalid(strformat("slot_copy: from and to are both slot %d", from));
  if (n_positions < 0 || n_positions > from_length)
    fail_invalid(strformat("slot_copy: n_positions %d is outside [0, length of slot %d = %d]",
                           n_positions, from, from_length));
}

} // namespace bonsai::plugin

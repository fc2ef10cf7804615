#pragma once
// Checkpoints of a slot's recurrent state (ABI 1.2) in device memory: the way
// back for a sequence whose state cannot be cut back. Each function throws
// PluginError.
#include <cstdint>

#include "context.hpp"

namespace bonsai::cuda {

// Bytes of one sequence's recurrent state (0 without DeltaNet layers).
uint64_t recurrent_state_bytes(const Context &ctx);

int32_t checkpoint_save(Context &ctx, int32_t slot);
void checkpoint_restore(Context &ctx, int32_t checkpoint, int32_t slot);
void checkpoint_free(Context &ctx, int32_t checkpoint);
int32_t checkpoint_position(const Context &ctx, int32_t checkpoint);

} // namespace bonsai::cuda

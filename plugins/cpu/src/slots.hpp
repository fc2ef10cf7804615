#pragma once
// What the CPU plugin adds to the shared slot functions (plugins/common,
// step_entry_points.hpp): making a slot's cache and copying a prefix between
// slots. Both throw PluginError and discard an open step.
#include <cstdint>

#include "context.hpp"

namespace bonsai::cpu {

int32_t slot_create(Context &ctx);
void slot_copy(Context &ctx, int32_t from, int32_t to, int32_t n_positions);

} // namespace bonsai::cpu

#pragma once
// bind_layered_model (ABI 1.2): a model whose layers name their mixer kind.
// The CPU plugin runs gated attention and gated DeltaNet layers (qwen35).
#include <cstdint>
#include <memory>

#include "bonsai/bonsai_backend.h"
#include "model.hpp"

namespace bonsai::cpu {

// Whether this plugin runs layers of a bonsai_mixer_kind.
bool supports_mixer_kind(uint32_t kind);

// Validates the description (kinds, shapes, handles) and allocates
// everything. Throws PluginError: UNSUPPORTED for a kind it does not run or
// layers of one kind with different shapes, INVALID_ARGUMENT for the rest.
std::unique_ptr<BoundModel> bind_layered_model(const bonsai_layered_model_desc &desc,
                                               const WeightLookup &lookup,
                                               const BindLimits &limits);

} // namespace bonsai::cpu

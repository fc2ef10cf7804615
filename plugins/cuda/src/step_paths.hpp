#pragma once
// The pieces of a step that the decode paths queue (step.cpp), shared with
// the tuner, which runs each path on a step's inputs before the step runs.
#include <vector>

#include "context.hpp"

namespace bonsai::cuda {

// One decoder layer on the step's n rows, launch by launch. Only launches:
// safe inside a stream capture.
void run_layer(const Context &ctx, const BoundModel &m, int layer, int n,
               const std::vector<StepSequence> &sequences);

// Captures the embedding and every layer of a single token of slot 0 as a
// CUDA graph (m.decode_graph), replayed by later steps.
void capture_decode_graph(const Context &ctx, BoundModel &m);

// Whether the open step replays that graph: a single token of slot 0 on the
// graph path, graphs on, not a layered model.
bool graph_step_applies(const Context &ctx, const BoundModel &m, const StepState &s);

} // namespace bonsai::cuda

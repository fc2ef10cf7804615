#pragma once
// One run of a decode path on the open step's inputs, as the tuner makes
// it: the embedding, every layer and the LM head with its argmax for every
// token of the step, queued on the stream; then what the run left. A run
// writes the step's KV entries and activations, which the step itself
// writes again after the tuner: the slots' lengths never move.
#include <string>

#include "context.hpp"
#include "tune_check.hpp"

namespace bonsai::cuda {

// The reference: the layers launch by launch, the LM head after them.
void queue_reference_run(const Context &ctx, const BoundModel &m, const StepState &step);

// `choice`'s run: the graph path (the captured graph where the step is a
// single token of slot 0, else launch by launch) or one persistent launch
// of its variant, the LM head after the layers unless it is in the launch.
void queue_choice_run(Context &ctx, BoundModel &m, const StepState &step,
                      const DecodeChoice &choice);

// Once the stream has run it: why the last run of `choice` failed (its
// persistent launch stalled), or "".
std::string run_failure(const BoundModel &m, const DecodeChoice &choice);

// Every token's logits and argmax ids that the last run left (waits for the stream).
StepOutputs read_step_outputs(const Context &ctx, const BoundModel &m, int n_tokens);

} // namespace bonsai::cuda

#pragma once
// decode=persistent in the step protocol: whether a step can run its layers
// as one launch, the launch, and what happens when a launch stalls (the
// kernel gives up after its deadline; the step is run again launch by
// launch and the model keeps decoding that way).
#include <string>

#include "context.hpp"

namespace bonsai::cuda {

// Sets up decode=persistent for the bound model when the option is on and
// the model suits it; otherwise logs why not (once) and leaves it off.
void prepare_persistent_decode(Context &ctx, BoundModel &m);

// Whether the open step (its sequences and tokens) runs on the persistent kernel.
bool persistent_step_applies(const BoundModel &m, const StepState &step);

// Queues the step's layers as one launch, then the copy of its status.
void launch_persistent_step(Context &ctx, BoundModel &m, const StepState &step);

// After the step has synchronized: the stall report of its persistent
// launch, or "" when it completed. A stall also turns decode=persistent off
// for this model, with a warning.
std::string take_persistent_stall(Context &ctx, BoundModel &m);

// After a step whose persistent launch completed, under option
// persistent_trace: reads the launch's marks back, adds them to the
// summary and writes the summary and the launch's marks to their files.
void take_persistent_trace(Context &ctx, BoundModel &m);

} // namespace bonsai::cuda

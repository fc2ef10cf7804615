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

// Whether the persistent kernel can run the open step: set up for the
// model, and the step's tokens and sequences within its limits.
bool persistent_step_fits(const BoundModel &m, const StepState &step);

// What the open step runs on without a tuner's choice: decode=persistent
// the persistent kernel as the options set it; decode=auto on sm_90+ the
// same for steps of several tokens and for single tokens from
// persistent_single_from on; else the graph path.
DecodeChoice fixed_decode_choice(const Context &ctx, const BoundModel &m, const StepState &step);

// What it runs on: under decode=auto the tuner's choice for its number of
// tokens when there is one, else the fixed choice (the graph path where the
// persistent kernel does not fit the step).
DecodeChoice step_decode_choice(const Context &ctx, const BoundModel &m, const StepState &step);

// Whether the weight buffer of steps of `n_tokens` tokens, cut into `slots`
// slots (persistent_stream), still holds the largest tile in each.
bool stream_fits(const Context &ctx, const BoundModel &m, int n_tokens, int slots);

// Whether the open step's plan can fuse Q/K/V with attention
// (persistent_qkv=fused): its instructions all resident at once, a share's
// weights within the buffer.
bool fused_fits(const Context &ctx, const BoundModel &m, const StepState &step);

// Whether a launch of `variant` computes the LM head and argmax itself.
bool head_in_launch(const PersistentDecode &p, const PersistentVariant &variant);

// Queues the step's layers as one launch of step.variant, then the copy of
// its status.
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

#pragma once
// The decode tuner (docs/cuda.md, "The decode tuner"). Under decode=auto the
// first step of each width (tokens a step) that the persistent kernel can
// run is tuned before it runs: on that step's inputs, the reference path
// (launch by launch) gives every token's logits, then each candidate
// (tune_candidates.hpp) runs once to be checked against them
// (tune_check.hpp), and those that passed run again in turns to be timed
// (tune_timer.hpp) while the budget (tune_budget_ms) lasts; the fastest
// that passed is taken for every later step of that width
// (tune_choice.hpp) and cached on disk (tune_cache.hpp), where the next
// context with the same device, model, options and width finds it, until
// the driver or the plugin build changes.
#include "context.hpp"

namespace bonsai::cuda {

// Tunes the open step's width when it is wanted and not done yet; a no-op
// otherwise (tune=off, another decode mode, a layered model, a step the
// persistent kernel cannot run, a driver that cannot time the stream).
void tune_step_width(Context &ctx, BoundModel &m, const StepState &step);

// What a tuning's choice is keyed by, for `m` at `width` (tune_cache.hpp).
TuneKey tune_key(const Context &ctx, const BoundModel &m, int width);

} // namespace bonsai::cuda

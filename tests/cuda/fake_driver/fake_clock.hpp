#pragma once
// The fake driver's device clock, scripted by a test. Without
// BONSAI_FAKE_CUDA_TIMES the fake keeps no time (cuEventElapsedTime answers
// CUDA_ERROR_NOT_SUPPORTED, and the plugin's decode tuner keeps its fixed
// choice). With it, every kernel run (direct, or a graph's) advances a
// virtual clock by the microseconds its rule gives, and events read that
// clock: BONSAI_FAKE_CUDA_TIMES="RULE;RULE;...", RULE = PART[+FLAG...]=US.
// A launch takes the first rule whose PART is in its kernel's name (an empty
// PART matches every kernel) and whose FLAGs it all has; none: 0 us. The
// persistent decode kernel's flags come from its arguments (fake_libcuda.cpp):
// head (the LM head in the launch), prefetch, mma, quantize, balanced
// (a plan of balanced shares), stream (weights streamed ahead), fused (Q/K/V
// and attention in one stage). Example:
// "persistent+prefetch=50;persistent=80;=3": a persistent launch 50 us with
// prefetching, 80 without, every other kernel 3.
#include <string>
#include <vector>

namespace fake_clock {

// Whether BONSAI_FAKE_CUDA_TIMES is set (read at every call).
bool scripted();

// The microseconds a run of `kernel` with `flags` takes. A malformed rule is
// a mistake in the test: it aborts, saying which.
double cost_us(const std::string &kernel, const std::vector<std::string> &flags);

} // namespace fake_clock

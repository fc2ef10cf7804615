#pragma once
// The one-line timing summary printed to stderr after a generation.
#include <string>
#include <string_view>

#include "bonsai/engine.hpp"

namespace bonsai::cli {

// e.g. "stats: backend cpu | load 120.5 ms | prompt 12 tokens, 850.1 t/s |
//       generated 64 tokens, 95.3 t/s | seed 42 | stop: length"
// The rates are llama.cpp's: prompt tokens per second of prompt evaluation,
// and decode steps per second after it (the first generated token comes
// from the prompt's logits, so it is not a step of its own).
std::string format_stats(std::string_view backend, const GenerateStats &stats,
                         StopReason stop_reason, uint64_t seed);

} // namespace bonsai::cli

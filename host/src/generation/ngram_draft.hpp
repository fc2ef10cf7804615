#pragma once
// Prompt lookup, the draft of speculative decoding that needs no model: the
// tokens that followed the most recent earlier occurrence of the context's
// last n tokens (code and retrieved text repeat themselves).
#include <cstdint>
#include <span>
#include <vector>

namespace bonsai::host {

// At most `max` tokens; none when the last `n` tokens do not occur earlier.
std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int32_t n, int32_t max);

} // namespace bonsai::host

#include "stats.hpp"

#include <cstdio>

namespace bonsai::cli {

std::string format_stats(std::string_view backend, const GenerateStats &s, StopReason stop_reason,
                         uint64_t seed) {
  char reused[48] = "";
  if (s.reused_tokens > 0)
    std::snprintf(reused, sizeof reused, " (+%d reused)", s.reused_tokens);
  char constrained[96] = "";
  if (s.constrained_tokens > 0)
    std::snprintf(constrained, sizeof constrained, " | constrained %d tokens, %d masks, %.1f ms",
                  s.constrained_tokens, s.constraint_masks, s.constraint_ms);
  char drafted[96] = "";
  if (s.drafted_tokens > 0)
    std::snprintf(drafted, sizeof drafted, " | draft %d proposed, %d kept (%.0f%%)",
                  s.drafted_tokens, s.accepted_tokens,
                  100.0 * s.accepted_tokens / s.drafted_tokens);
  char line[512];
  std::snprintf(line, sizeof line,
                "stats: backend %.*s | load %.1f ms | prompt %d tokens%s, %.1f t/s | "
                "generated %d tokens, %.1f t/s%s%s | seed %llu | stop: %.*s",
                static_cast<int>(backend.size()), backend.data(), s.load_ms, s.prompt_tokens,
                reused, s.prompt_tps, s.gen_tokens, s.gen_tps, drafted, constrained,
                static_cast<unsigned long long>(seed),
                static_cast<int>(to_string(stop_reason).size()), to_string(stop_reason).data());
  return line;
}

} // namespace bonsai::cli

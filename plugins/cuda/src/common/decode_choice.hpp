#pragma once
// What a decode step of up to 8 tokens runs on: the graph path (a launch per
// operation, a single token of slot 0 replayed as a CUDA graph) or the
// persistent kernel in one of its variants. The tuner's candidates are such
// choices, and so is the fixed choice decode=auto makes without it.
#include <compare>
#include <optional>
#include <string>

namespace bonsai::cuda {

// How one persistent launch runs: the per-launch switches of the kernel.
struct PersistentVariant {
  bool head = true;      // persistent_head: the LM head and argmax in the launch, where it applies
  bool prefetch = false; // persistent_prefetch=next: the next instruction's weights to L2
  bool balanced = false; // persistent_shares=balanced: a plan of balanced shares
  int stream = 1;        // persistent_stream=N: N weight slots, N - 1 instructions ahead
  bool fused = false;    // persistent_qkv=fused: Q/K/V and attention in one stage
  auto operator<=>(const PersistentVariant &) const = default;
};

struct DecodeChoice {
  bool persistent = false;   // else the graph path
  PersistentVariant variant; // of the persistent kernel
  auto operator<=>(const DecodeChoice &) const = default;
};

// The backend options that select `choice` ("decode=graph",
// "decode=persistent;persistent_head=off"): its name in the tuner's table
// and cache, and what a user passes to take it without tuning. Only the
// switches away from the persistent defaults are named.
std::string choice_options(const DecodeChoice &choice);

// The choice a name of choice_options() stands for, or nullopt when the text
// is not exactly such a name (another build's candidate, a damaged file).
std::optional<DecodeChoice> choice_from_options(const std::string &text);

} // namespace bonsai::cuda

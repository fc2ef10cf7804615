#pragma once
// tiny-q1's prompt and the first tokens of the float64 reference's greedy
// continuation (tests/data/tiny-q1.ref.greedy.json; the CPU and CUDA fast
// paths agree with it over 8 tokens), for end-to-end checks through the host.
#include <cstdint>
#include <vector>

#include "bonsai/engine.hpp"

namespace cuda_test {

inline const std::vector<int32_t> kTinyQ1Prompt = {223, 1174, 1541, 914, 1994, 1809, 898, 100};
inline const std::vector<int32_t> kTinyQ1Greedy = {1021, 158, 1021, 158};

// Greedy decoding of kTinyQ1Greedy.size() tokens after kTinyQ1Prompt.
inline std::vector<int32_t> tiny_q1_greedy(bonsai::Session &session) {
  std::vector<int32_t> out{session.eval_argmax(kTinyQ1Prompt)};
  while (out.size() < kTinyQ1Greedy.size())
    out.push_back(session.eval_argmax(std::vector<int32_t>{out.back()}));
  return out;
}

} // namespace cuda_test

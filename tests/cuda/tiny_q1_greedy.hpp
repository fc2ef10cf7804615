#pragma once
// tiny-q1's prompt and the first tokens of the float64 reference's greedy
// continuation (tests/data/tiny-q1.ref.greedy.json; the CPU and CUDA fast
// paths agree with it over 8 tokens), for end-to-end checks through the host.
#include <cstdint>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "cuda_test_support.hpp"

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

// tiny-q1 on the CUDA plugin with `plugin_options` (64 positions, steps of
// up to 16 tokens).
inline bonsai::Engine open_tiny_q1_cuda(const std::string &plugin_options) {
  bonsai::EngineOptions options;
  options.backend = "cuda";
  options.n_ctx = 64;
  options.n_batch = 16;
  options.plugin_options = plugin_options;
  return bonsai::Engine::open(tiny_q1(), options);
}

// What a run of tiny-q1 on the CUDA plugin with `plugin_options` gives.
struct TinyQ1Outputs {
  std::vector<int32_t> greedy;     // the greedy continuation above
  std::vector<float> prefill_last; // logits of the last token of a 12-token prefill
};
inline TinyQ1Outputs tiny_q1_outputs(const std::string &plugin_options) {
  const bonsai::Engine engine = open_tiny_q1_cuda(plugin_options);
  TinyQ1Outputs run;
  {
    bonsai::Session session = engine.create_session();
    run.greedy = tiny_q1_greedy(session);
  }
  {
    // 12 tokens: the prefill runs on the tensor-core kernels.
    std::vector<int32_t> prompt = kTinyQ1Prompt;
    prompt.insert(prompt.end(), {17, 400, 1021, 158});
    bonsai::Session session = engine.create_session();
    run.prefill_last = session.eval(prompt).logits;
  }
  return run;
}

} // namespace cuda_test

#pragma once
// The context and step sizes bonsai bench opens its engine with when the
// user did not choose them: just what the tests need, so that a small -p
// does not reserve a large cache, and large enough for every step the tests
// take (a -np P step of P tokens, a drafted step of the token plus its
// proposals).
#include <cstdint>

namespace bonsai::cli {

struct BenchNeeds {
  int32_t largest_prompt = 0;   // largest -p (0: no pp test)
  int32_t largest_gen = 0;      // largest -n (0: no tg test)
  int32_t largest_depth = 0;    // largest -d
  int32_t largest_parallel = 1; // largest -np
  int32_t draft_max = 0;        // --draft-max when a draft is given, else 0
};

struct BenchSizes {
  int32_t n_ctx = 0;
  int32_t n_batch = 0;
};

BenchSizes bench_sizes(const BenchNeeds &needs);

} // namespace bonsai::cli

#include "bench_sizes.hpp"

#include <algorithm>

namespace bonsai::cli {

BenchSizes bench_sizes(const BenchNeeds &n) {
  // A drafted generation holds its one-token prompt and, at its end, the
  // proposals of its last step; that step carries the token and them.
  const int32_t drafted_step = n.draft_max > 0 ? 1 + n.draft_max : 0;
  BenchSizes s;
  s.n_ctx = n.largest_depth + std::max({n.largest_prompt, n.largest_gen, n.largest_parallel, 1}) +
            drafted_step;
  // ppN x P in one step when it fits 4096 tokens, else in chunks; the depth
  // prefilled in steps of up to 512.
  s.n_batch =
      std::max({std::min(n.largest_prompt * n.largest_parallel, std::max(4096, n.largest_prompt)),
                std::min(n.largest_depth, 512), n.largest_parallel, drafted_step, 1});
  return s;
}

} // namespace bonsai::cli

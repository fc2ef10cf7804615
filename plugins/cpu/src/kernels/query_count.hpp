#pragma once
// Runs fn.template operator()<NQ>() with NQ = n (1..kMaxQueries; more runs
// as kMaxQueries): the multi-query attention kernels of every set are
// templates on the query count, so that their accumulators stay in registers.
#include "kernels/kernel_set.hpp"

namespace bonsai::cpu {

template <class Fn> void with_query_count(int n, Fn &&fn) {
  static_assert(kMaxQueries == 4, "one case per query count");
  switch (n) {
  case 1:
    return fn.template operator()<1>();
  case 2:
    return fn.template operator()<2>();
  case 3:
    return fn.template operator()<3>();
  default:
    return fn.template operator()<4>();
  }
}

} // namespace bonsai::cpu

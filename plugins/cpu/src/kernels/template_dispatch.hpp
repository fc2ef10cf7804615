#pragma once
// Run-time values to template arguments, for kernels that are templates on
// them so that their accumulators stay in registers:
//   with_query_count: fn.template operator()<NQ>() with NQ = n
//     (1..kMaxQueries; more runs as kMaxQueries);
//   with_query_count_and_kv: fn.template operator()<NQ, T>() with T the
//     element type of a KV span;
//   with_float_type: fn.template operator()<T>() for the float weight types
//     (F16, BF16; anything else as F32).
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

template <class Fn> void with_query_count_and_kv(int n, KvType type, Fn &&fn) {
  with_query_count(n, [&]<int NQ>() {
    if (type == KvType::F16)
      fn.template operator()<NQ, KvType::F16>();
    else
      fn.template operator()<NQ, KvType::F32>();
  });
}

template <class Fn> void with_float_type(GgmlType type, Fn &&fn) {
  switch (type) {
  case GgmlType::F16:
    return fn.template operator()<GgmlType::F16>();
  case GgmlType::BF16:
    return fn.template operator()<GgmlType::BF16>();
  default:
    return fn.template operator()<GgmlType::F32>();
  }
}

} // namespace bonsai::cpu

#include "reply/response_ids.hpp"

#include <random>

namespace bonsai::server {

std::string new_response_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id(prefix);
  for (int i = 0; i < 24; ++i)
    id += kChars[rng() % kChars.size()];
  return id;
}

} // namespace bonsai::server

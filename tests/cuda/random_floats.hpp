#pragma once
// Normally distributed test inputs for the kernel emulator tests: the same
// seed gives the same values in every test file.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace kernel_test {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

} // namespace kernel_test

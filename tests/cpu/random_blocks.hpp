#pragma once
// Random quantized rows for the CPU kernel tests: every block an f16 scale
// of 0.01..0.02 of either sign, then random code bytes.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace bonsai::cpu::test {

inline std::vector<uint8_t> random_rows(size_t block_bytes, int64_t rows, int64_t blocks,
                                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> w(block_bytes * static_cast<size_t>(rows * blocks));
  for (size_t at = 0; at < w.size(); at += block_bytes) {
    const uint16_t d = static_cast<uint16_t>(0x2000 + rng() % 0x400) | (rng() % 2 ? 0x8000 : 0);
    std::memcpy(&w[at], &d, 2);
    for (size_t i = 2; i < block_bytes; ++i)
      w[at + i] = static_cast<uint8_t>(rng());
  }
  return w;
}

} // namespace bonsai::cpu::test

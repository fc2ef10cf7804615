#pragma once
// Golden-data readers (tests/data, see its README.md) and the similarity
// measures the numerics contract is stated in (docs/abi.md, "Numerics").
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini_json.hpp"

namespace bonsai::test {

// A little-endian float32 file of exactly `count` values.
inline std::vector<float> read_f32_file(const std::string &path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() != count * sizeof(float))
    throw std::runtime_error(path + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                             std::to_string(count * sizeof(float)));
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    for (int b = 3; b >= 0; --b)
      bits = (bits << 8) | static_cast<uint8_t>(bytes[i * 4 + static_cast<size_t>(b)]);
    std::memcpy(&values[i], &bits, sizeof(float));
  }
  return values;
}

struct GoldenCase {
  std::string name;
  std::string gguf_path;
  std::vector<int32_t> prompt;        // NAME.prompt.json "tokens"
  std::vector<float> ref_logits;      // [prompt.size()][n_vocab]
  std::vector<int32_t> greedy_prompt; // NAME.ref.greedy.json "prompt"
  std::vector<int32_t> greedy;        // NAME.ref.greedy.json "greedy"
  int n_vocab = 0;
};

inline GoldenCase load_golden_case(const std::string &data_dir, const std::string &name,
                                   int n_vocab) {
  GoldenCase c;
  c.name = name;
  c.n_vocab = n_vocab;
  c.gguf_path = data_dir + "/" + name + ".gguf";
  c.prompt = mini_json::parse_file(data_dir + "/" + name + ".prompt.json")["tokens"]
                 .as_int_vector<int32_t>();
  c.ref_logits = read_f32_file(data_dir + "/" + name + ".ref.logits.f32",
                               c.prompt.size() * static_cast<size_t>(n_vocab));
  const mini_json::Value greedy = mini_json::parse_file(data_dir + "/" + name + ".ref.greedy.json");
  c.greedy_prompt = greedy["prompt"].as_int_vector<int32_t>();
  c.greedy = greedy["greedy"].as_int_vector<int32_t>();
  return c;
}

// A golden model's name as a GoogleTest parameter name ("tiny-q1" -> "tiny_q1").
inline std::string test_name(std::string name) {
  for (char &c : name)
    if (c == '-')
      c = '_';
  return name;
}

// Cosine similarity of two vectors, accumulated in double.
template <class A, class B> double cosine(const A *a, const B *b, size_t n) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(a[i]);
    const double y = static_cast<double>(b[i]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  if (aa == 0.0 || bb == 0.0)
    return aa == bb ? 1.0 : 0.0;
  return ab / std::sqrt(aa * bb);
}

// Index of the largest value; the lowest index wins ties.
template <class T> int32_t argmax(const T *v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (v[i] > v[best])
      best = i;
  return static_cast<int32_t>(best);
}

} // namespace bonsai::test

// The table of weight types this project knows, and row size arithmetic.
#include <array>
#include <limits>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

constexpr std::array<TypeTraits, 12> kTypes = {{
    {GgmlType::F32, "f32", 1, 4, 0, "F32", false},
    {GgmlType::F16, "f16", 1, 2, 1, "F16", false},
    {GgmlType::Q4_0, "q4_0", kQ4BlockSize, sizeof(BlockQ4_0), 2, "Q4_0 (32 per block)", false},
    {GgmlType::Q8_0, "q8_0", kQ8BlockSize, sizeof(BlockQ8_0), 8, "Q8_0 (32 per block)", false},
    {GgmlType::BF16, "bf16", 1, 2, 30, "BF16", false},
    {GgmlType::TQ1_0, "tq1_0", kTqBlockSize, sizeof(BlockTQ1_0), 34,
     "TQ1_0 (ternary, 256 per block, ggml)", true},
    {GgmlType::TQ2_0, "tq2_0", kTqBlockSize, sizeof(BlockTQ2_0), 35,
     "TQ2_0 (ternary, 256 per block, ggml)", true},
    {GgmlType::Q1_0, "q1_0", kQ1BlockSize, sizeof(BlockQ1_0), 41, "Q1_0 (1-bit, 128 per block)",
     false},
    {GgmlType::Q2_0, "q2_0", kQ2BlockSize, sizeof(BlockQ2_0), 42,
     "Q2_0 (ternary, 128 per block, PrismML)", true},
    {GgmlType::PQ2_0, "pq2_0", kQ2BlockSize, sizeof(BlockQ2_0), 142,
     "PQ2_0 (ternary, 128 per block, PrismML)", true},
    {GgmlType::PTQ1_0, "ptq1_0", kPtq1BlockSize, sizeof(BlockPTQ1_0), 143,
     "PTQ1_0 (ternary, 1.75 bits, 128 per block, PrismML)", true},
    {GgmlType::Q2_0_G64, "q2_0_g64", kQ2G64BlockSize, sizeof(BlockQ2_0G64), 42,
     "Q2_0 (ternary, 64 per block, mainline llama.cpp)", true},
}};

} // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  for (const auto &t : kTypes)
    if (static_cast<uint32_t>(t.type) == type_id)
      return t;
  return std::nullopt;
}

std::optional<TypeTraits> file_type_traits(uint32_t file_id) {
  for (const auto &t : kTypes)
    if (t.file_id == file_id)
      return t; // Q2_0 comes before Q2_0_G64
  return std::nullopt;
}

TypeTraits traits_of(GgmlType type) {
  const auto id = static_cast<uint32_t>(type);
  if (auto t = type_traits(id))
    return *t;
  throw Error("ggml type id " + std::to_string(id) + " is not a weight type this build knows");
}

std::string_view type_name(uint32_t type_id) {
  if (auto t = type_traits(type_id))
    return t->name;
  return "unknown";
}

std::string type_description(GgmlType type) {
  if (auto t = type_traits(static_cast<uint32_t>(type)))
    return std::string(t->description);
  return "unknown type " + std::to_string(static_cast<uint32_t>(type));
}

std::optional<GgmlType> type_from_name(std::string_view name) {
  for (const auto &t : kTypes)
    if (t.name == name)
      return t.type;
  return std::nullopt;
}

size_t row_bytes(GgmlType type, int64_t n) {
  const TypeTraits t = traits_of(type);
  if (n < 0)
    throw Error("a " + std::string(t.name) + " row cannot have a negative length (" +
                std::to_string(n) + ")");
  if (n % t.block_elements != 0)
    throw Error("a " + std::string(t.name) + " row of " + std::to_string(n) +
                " elements is not a whole number of blocks of " + std::to_string(t.block_elements) +
                " elements");
  const auto blocks = static_cast<uint64_t>(n / t.block_elements);
  if (blocks > std::numeric_limits<size_t>::max() / t.block_bytes)
    throw Error("a " + std::string(t.name) + " row of " + std::to_string(n) +
                " elements is too large to address");
  return static_cast<size_t>(blocks) * t.block_bytes;
}

} // namespace bonsai

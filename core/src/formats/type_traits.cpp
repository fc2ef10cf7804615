// The table of weight types this project knows, and row size arithmetic.
#include <array>
#include <limits>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

constexpr std::array<TypeTraits, 6> kTypes = {{
    {GgmlType::F32, "f32", 1, 4},
    {GgmlType::F16, "f16", 1, 2},
    {GgmlType::Q8_0, "q8_0", kQ8BlockSize, sizeof(BlockQ8_0)},
    {GgmlType::BF16, "bf16", 1, 2},
    {GgmlType::Q1_0, "q1_0", kQ1BlockSize, sizeof(BlockQ1_0)},
    {GgmlType::Q2_0, "q2_0", kQ2BlockSize, sizeof(BlockQ2_0)},
}};

} // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  for (const auto &t : kTypes)
    if (static_cast<uint32_t>(t.type) == type_id)
      return t;
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

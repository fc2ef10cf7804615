// Exact conversions between encodings, through the integer view of each
// block (int_blocks.hpp): decode k and d per source block, check that the
// target can hold them, encode.
#include "bonsai/core/convert.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "bonsai/core/error.hpp"
#include "int_blocks.hpp"

namespace bonsai {
namespace {

bool is_float(GgmlType t) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
}
bool is_ternary(GgmlType t) {
  return traits_of(t).ternary;
}
// Targets an exact conversion may produce.
bool is_int_target(GgmlType t) {
  return is_ternary(t) || t == GgmlType::Q1_0 || t == GgmlType::Q8_0;
}

[[noreturn]] void refuse(GgmlType from, GgmlType to, int64_t block, int64_t n_per_block,
                         const std::string &why) {
  throw Error("cannot convert " + std::string(type_name(static_cast<uint32_t>(from))) + " to " +
              std::string(type_name(static_cast<uint32_t>(to))) + " without loss: block " +
              std::to_string(block) + " (elements " + std::to_string(block * n_per_block) + ".." +
              std::to_string((block + 1) * n_per_block - 1) + ") " + why);
}

// Source values of a row as integers k[e] with one f16 scale per 32
// elements (every block size is a multiple of 32).
struct IntRow {
  std::vector<int8_t> k;
  std::vector<uint16_t> d32;
};

IntRow decode_int_row(GgmlType type, const uint8_t *src, int64_t n) {
  const TypeTraits t = traits_of(type);
  IntRow row;
  row.k.resize(static_cast<size_t>(n));
  row.d32.resize(static_cast<size_t>(n / 32));
  for (int64_t b = 0; b < n / t.block_elements; ++b) {
    uint16_t d = 0;
    detail::decode_block(type, src + b * t.block_bytes, row.k.data() + b * t.block_elements, &d);
    for (int64_t g = 0; g < t.block_elements / 32; ++g)
      row.d32[static_cast<size_t>(b * t.block_elements / 32 + g)] = d;
  }
  return row;
}

// Float source: per target block, d = the largest |w|, which must be an f16
// value, and every w must be -d, d or (ternary target) 0.
IntRow float_to_int_row(GgmlType from, GgmlType to, const void *src, int64_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  dequantize_row(from, src, w.data(), n);
  const int64_t g = traits_of(to).block_elements;
  IntRow row;
  row.k.resize(static_cast<size_t>(n));
  row.d32.resize(static_cast<size_t>(n / 32));
  for (int64_t b = 0; b < n / g; ++b) {
    float d = 0.0f;
    for (int64_t e = b * g; e < (b + 1) * g; ++e) {
      if (!std::isfinite(w[e]))
        refuse(from, to, b, g, "holds a value that is not finite");
      d = std::max(d, std::fabs(w[e]));
    }
    const uint16_t d_bits = f32_to_fp16(d);
    if (fp16_to_f32(d_bits) != d)
      refuse(from, to, b, g, "has the scale " + std::to_string(d) + ", which f16 cannot hold");
    for (int64_t e = b * g; e < (b + 1) * g; ++e) {
      const float v = w[e];
      if (v != 0.0f && v != d && v != -d)
        refuse(from, to, b, g,
               "holds " + std::to_string(v) +
                   ", which is not -d, 0 or d for d = " + std::to_string(d));
      row.k[e] = static_cast<int8_t>(v > 0.0f ? 1 : (v < 0.0f ? -1 : 0));
    }
    for (int64_t i = b * g / 32; i < (b + 1) * g / 32; ++i)
      row.d32[i] = d_bits;
  }
  return row;
}

void encode_int_row(GgmlType from, GgmlType to, const IntRow &row, uint8_t *dst, int64_t n) {
  const TypeTraits t = traits_of(to);
  const int64_t g = t.block_elements;
  for (int64_t b = 0; b < n / g; ++b) {
    const uint16_t d = row.d32[static_cast<size_t>(b * g / 32)];
    for (int64_t i = b * g / 32; i < (b + 1) * g / 32; ++i)
      if (row.d32[i] != d)
        refuse(from, to, b, g,
               "has two scales (" + std::to_string(fp16_to_f32(d)) + " and " +
                   std::to_string(fp16_to_f32(row.d32[i])) + "); " + std::string(t.name) +
                   " keeps one per " + std::to_string(g) + " elements");
    int bad = 0;
    if (!detail::encode_block(to, row.k.data() + b * g, d, dst + b * t.block_bytes, &bad)) {
      const int k = row.k[static_cast<size_t>(b * g + bad)];
      refuse(from, to, b, g,
             "holds " + std::to_string(k) + " * d at element " + std::to_string(b * g + bad) +
                 ", which " + std::string(t.name) + " cannot store");
    }
  }
}

} // namespace

bool can_convert(GgmlType from, GgmlType to) {
  if (from == to)
    return true;
  if (!is_int_target(to))
    return false;
  if (is_float(from))
    return to != GgmlType::Q8_0;
  if (to == GgmlType::Q8_0)
    return detail::has_int_view(from);
  return is_ternary(from) || from == GgmlType::Q1_0;
}

void convert_row(GgmlType from, GgmlType to, const void *src, void *dst, int64_t n) {
  const size_t src_bytes = row_bytes(from, n); // validates both types and n
  row_bytes(to, n);
  if (from == to) {
    if (src_bytes)
      std::memcpy(dst, src, src_bytes);
    return;
  }
  if (!can_convert(from, to))
    throw Error("no exact conversion from " + std::string(type_name(static_cast<uint32_t>(from))) +
                " to " + std::string(type_name(static_cast<uint32_t>(to))));
  if (n == 0)
    return;
  const IntRow row = is_float(from) ? float_to_int_row(from, to, src, n)
                                    : decode_int_row(from, static_cast<const uint8_t *>(src), n);
  encode_int_row(from, to, row, static_cast<uint8_t *>(dst), n);
}

void convert_rows(GgmlType from, GgmlType to, const uint8_t *src, uint8_t *dst, int64_t cols,
                  int64_t rows, const std::string &name) {
  const size_t src_row = row_bytes(from, cols);
  const size_t dst_row = row_bytes(to, cols);
  for (int64_t r = 0; r < rows; ++r) {
    try {
      convert_row(from, to, src + static_cast<size_t>(r) * src_row,
                  dst + static_cast<size_t>(r) * dst_row, cols);
    } catch (const Error &e) {
      throw Error("tensor '" + name + "' row " + std::to_string(r) + ": " + e.what());
    }
  }
}

std::vector<GgmlType> upload_candidates(GgmlType stored) {
  switch (stored) {
  case GgmlType::PQ2_0:
  case GgmlType::PTQ1_0:
  case GgmlType::TQ1_0:
  case GgmlType::TQ2_0:
    return {stored, GgmlType::Q2_0, GgmlType::Q8_0};
  case GgmlType::Q2_0:
  case GgmlType::Q2_0_G64:
  case GgmlType::Q4_0:
    return {stored, GgmlType::Q8_0};
  default:
    return {stored};
  }
}

} // namespace bonsai

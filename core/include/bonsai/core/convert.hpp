#pragma once
// Exact conversions between weight encodings: the same values in another
// layout, or a refusal that names the first block standing in the way.
// The host uses them to hand a plugin an encoding it computes with (e.g.
// PTQ1_0 as Q2_0), bonsai-gguf convert to repack files.
#include <cstdint>
#include <string>
#include <vector>

#include "bonsai/core/formats.hpp"

namespace bonsai {

// Converts one row of n elements (a whole number of blocks of both types)
// from `from` to `to` without changing any value. Lossless cases:
//  - between the ternary types (a larger target block needs one scale
//    over all of it; the base-3 types cannot store code 3);
//  - Q1_0, Q4_0 and the ternary types to Q8_0;
//  - Q1_0 to a ternary type, a ternary type to Q1_0 when no value is 0;
//  - F32/F16/BF16 to Q1_0 or a ternary type when every block holds only
//    -d, d (and 0 for ternary) for one f16-exact d.
// Throws bonsai::Error("... block N (elements a..b): why") otherwise.
void convert_row(GgmlType from, GgmlType to, const void *src, void *dst, int64_t n);

// convert_row over `rows` rows of `cols` elements, src and dst packed row
// after row. A refusal is rethrown as "tensor '<name>' row R: ...".
void convert_rows(GgmlType from, GgmlType to, const uint8_t *src, uint8_t *dst, int64_t cols,
                  int64_t rows, const std::string &name);

// Whether convert_row has a rule from `from` to `to` (the data may still
// refuse).
bool can_convert(GgmlType from, GgmlType to);

// The encodings a plugin may be handed for a weight stored as `stored`,
// best first: the stored encoding itself, then the form bonsai's kernels
// compute with (Q2_0 for the ternary types with 128 or more per block,
// Q8_0 for Q4_0), then Q8_0, which holds every quantized type exactly.
std::vector<GgmlType> upload_candidates(GgmlType stored);

} // namespace bonsai

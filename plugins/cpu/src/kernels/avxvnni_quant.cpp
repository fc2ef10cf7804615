// The Q1_0 and Q2_0 row kernels of the avxvnni set: the AVX2 kernels
// (avx2_quant_tile.hpp) with each block's int8 dot products as four
// vpdpbusd (AVX-VNNI, 256-bit) instead of four vpmaddubsw, three vpaddw and a
// vpmaddwd. The int32 sums are the same, so the results are bit-identical to
// the avx2 set's. Only called where the CPU has AVX-VNNI (select.cpp).
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kQuantTile = 8;  // tokens per tile, as the avx2 set
constexpr int kDecodeRows = 4; // rows per decode step, as the avx2 set
constexpr int kTokenTile = 4;  // mainline Q2_0 tokens per tile, as the avx2 set

#define BONSAI_QUANT_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define BONSAI_QUANT_VNNI 1
#include "kernels/avx2_quant_tile.hpp"

} // namespace

void avxvnni_rows_q1(const RowJob &job) {
  run_tiles<quant_tile<Q1Unpack, kQuantTile>, quant_rows<Q1Unpack, kDecodeRows>, kQuantTile>(job);
}
void avxvnni_rows_q2_g64(const RowJob &job) {
  run_tiles<q2_g64_tile<kTokenTile>, q2_g64_tile<1>, kTokenTile>(job);
}
void avxvnni_rows_q2(const RowJob &job) {
  run_tiles<quant_tile<Q2Unpack, kQuantTile>, quant_rows<Q2Unpack, kDecodeRows>, kQuantTile>(job);
}

} // namespace bonsai::cpu

#endif

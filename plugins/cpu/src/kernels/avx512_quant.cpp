// AVX-512 (BW + VNNI) kernels for Q1_0, Q2_0 and mainline Q2_0 (group 64):
// the tiles of avx512_quant_tile.hpp over a matmul's rows and tokens.
#if defined(__x86_64__) || defined(__i386__)

#include "kernels/avx512_quant_tile.hpp"

namespace bonsai::cpu {
namespace {

using avx512_tile::kTileRows;
using avx512_tile::kTokenTile;
using avx512_tile::Q1Unpack;
using avx512_tile::Q2G64Unpack;
using avx512_tile::Q2Unpack;
using avx512_tile::tile;

// Rows in groups of NR (then one by one) for tokens [t0, t0 + NT).
template <class Unpack, int NR, int NT> void row_groups(const RowJob &job, int t0) {
  int64_t r = 0;
  for (; r + NR <= job.n_rows; r += NR)
    tile<Unpack, NR, NT>(job, r, t0);
  for (; r < job.n_rows; ++r)
    tile<Unpack, 1, NT>(job, r, t0);
}

// Tokens in tiles of 3, and a remainder of 2 tokens (or 4 = 2 + 2) as 2-token
// tiles: each pass over the rows unpacks every block again, so a batch of 8
// (3 + 3 + 2) unpacks 3 times instead of 4 and a batch of 2 once instead of
// twice. Decode is the single-token tile.
template <class Unpack> void run_tiles(const RowJob &job) {
  int t = 0;
  while (job.n_tokens - t >= kTokenTile && job.n_tokens - t != 4) {
    row_groups<Unpack, kTileRows, kTokenTile>(job, t);
    t += kTokenTile;
  }
  for (; job.n_tokens - t >= 2; t += 2)
    row_groups<Unpack, kTileRows, 2>(job, t);
  if (t < job.n_tokens)
    row_groups<Unpack, kTileRows, 1>(job, t);
}

} // namespace

void avx512_rows_q1(const RowJob &job) {
  run_tiles<Q1Unpack>(job);
}
void avx512_rows_q2(const RowJob &job) {
  run_tiles<Q2Unpack>(job);
}
void avx512_rows_q2_g64(const RowJob &job) {
  run_tiles<Q2G64Unpack>(job);
}

} // namespace bonsai::cpu

#endif

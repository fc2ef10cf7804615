// AVX-512 (BW + VNNI) kernels for Q1_0, Q2_0 and mainline Q2_0 (group 64):
// the tiles of avx512_quant_tile.hpp over a matmul's rows and tokens.
#if defined(__x86_64__) || defined(__i386__)

#include <type_traits>

#include "kernels/avx512_quant_tile.hpp"

namespace bonsai::cpu {
namespace {

using avx512_tile::kTileRows;
using avx512_tile::kTokenTile;
using avx512_tile::Q1Unpack;
using avx512_tile::Q2G64Unpack;
using avx512_tile::Q2Unpack;
using avx512_tile::tile;

// Steps of up to this many tokens run row group by row group, every token
// tile over a group before the next group, so that each weight is read from
// memory once; their activations stay in L2 (16 rows of up to 12,288
// inputs). Larger steps (prefill) run token tile by token tile over all the
// rows, each tile's activations staying in L1.
constexpr int kRowMajorTokens = 16;

// fn(NR tag, r) for the rows in groups of NR = kTileRows from r, then one
// by one.
template <class Fn> void row_groups(int64_t n_rows, Fn &&fn) {
  int64_t r = 0;
  for (; r + kTileRows <= n_rows; r += kTileRows)
    fn(std::integral_constant<int, kTileRows>{}, r);
  for (; r < n_rows; ++r)
    fn(std::integral_constant<int, 1>{}, r);
}

// Tokens in tiles of 3, and a remainder of 2 tokens (or 4 = 2 + 2) as 2-token
// tiles: each pass over the rows unpacks every block again, so a batch of 8
// (3 + 3 + 2) unpacks 3 times instead of 4 and a batch of 2 once instead of
// twice. fn(NT tag, t0) runs one tile of NT tokens; every token gets the
// same tile size in either order below, so its result does not depend on
// the order.
template <class Fn> void token_tiles(int n_tokens, Fn &&fn) {
  int t = 0;
  while (n_tokens - t >= kTokenTile && n_tokens - t != 4) {
    fn(std::integral_constant<int, kTokenTile>{}, t);
    t += kTokenTile;
  }
  for (; n_tokens - t >= 2; t += 2)
    fn(std::integral_constant<int, 2>{}, t);
  if (t < n_tokens)
    fn(std::integral_constant<int, 1>{}, t);
}

// A small step: each row group against every token tile, the first tile
// prefetching. A large step: each token tile over every row group, without
// a prefetch (with three tokens of work per block the hardware prefetcher
// keeps up, and the prefetches cost prefill about a tenth, 8B Q2_0 pp512).
template <class Unpack> void run_tiles(const RowJob &job) {
  if (job.n_tokens <= kRowMajorTokens) {
    row_groups(job.n_rows, [&](auto nr, int64_t r) {
      token_tiles(job.n_tokens, [&](auto nt, int t0) {
        tile<Unpack, decltype(nr)::value, decltype(nt)::value>(job, r, t0, t0 == 0);
      });
    });
    return;
  }
  token_tiles(job.n_tokens, [&](auto nt, int t0) {
    row_groups(job.n_rows, [&](auto nr, int64_t r) {
      tile<Unpack, decltype(nr)::value, decltype(nt)::value>(job, r, t0, false);
    });
  });
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

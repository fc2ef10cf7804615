#include "matmul.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include "plugin_error.hpp"
#include "tile_format.hpp"

namespace bonsai::cpu {
namespace tbb = oneapi::tbb;

const QuantizedActs &ActInput::quantized(QuantLayout layout, QuantizeRowFn quantize,
                                         tbb::task_arena &arena) {
  const int index = static_cast<int>(layout);
  if (ready_[index])
    return views_[index];
  QuantBuffer &buffer = scratch_.buffers[index];
  const int64_t stride = padded_token_stride(n_tokens_);
  const int meta = meta_per_block(layout);
  const int64_t block_bytes = q_block_bytes(layout);
  buffer.reserve(stride, cols_, block_bytes, meta);
  const int64_t n_blocks = cols_ / kActBlock;
  const auto quantize_token = [&](int t) {
    QuantTarget out;
    out.q = buffer.q() + static_cast<int64_t>(t) * block_bytes;
    out.d = buffer.d() + static_cast<int64_t>(t) * meta;
    out.dsum = buffer.dsum() + t;
    out.stride = stride;
    quantize(x_ + t * ldx_, cols_, layout, out);
  };
  if (n_tokens_ >= 8) {
    arena.execute([&] { tbb::parallel_for(0, n_tokens_, quantize_token); });
  } else {
    for (int t = 0; t < n_tokens_; ++t)
      quantize_token(t);
  }
  QuantizedActs &view = views_[index];
  view.cols = cols_;
  view.n_blocks = n_blocks;
  view.n_tokens = n_tokens_;
  view.token_stride = stride;
  view.d_per_block = meta;
  view.block_bytes = block_bytes;
  view.q = buffer.q();
  view.d = buffer.d();
  view.dsum = layout_has_lane_meta(layout) ? nullptr : buffer.dsum();
  ready_[index] = true;
  return view;
}

namespace {

struct PreparedTarget {
  MatmulTarget target;
  RowKernel kernel = nullptr;
  const QuantizedActs *q = nullptr;
  int64_t row_chunks = 0;
  size_t first_task = 0;
};

float silu_times(float gate, float up, bool exact) {
  if (exact) {
    const double g = gate;
    return static_cast<float>(g / (1.0 + std::exp(-g)) * static_cast<double>(up));
  }
  return gate / (1.0f + std::exp(-gate)) * up;
}

RowJob make_job(const Weight &w, const QuantizedActs *q, const ActInput &in, int64_t r0, int64_t r1,
                int t0, int t1) {
  RowJob job;
  job.type = w.type;
  job.w = w.row(r0);
  job.w_row_bytes = w.row_bytes;
  job.cols = w.cols;
  job.n_rows = r1 - r0;
  job.n_tokens = t1 - t0;
  job.x = in.x() + static_cast<int64_t>(t0) * in.ldx();
  job.ldx = in.ldx();
  if (q != nullptr)
    job.q = q->tokens_from(t0);
  return job;
}

} // namespace

void MatmulRunner::run(ActInput &in, std::initializer_list<MatmulTarget> targets) {
  std::vector<PreparedTarget> prepared;
  prepared.reserve(targets.size());
  const int64_t token_blocks = (in.n_tokens() + kTokenBlock - 1) / kTokenBlock;
  const int64_t block_tokens = std::min<int64_t>(in.n_tokens(), kTokenBlock);
  const int64_t task_rows =
      std::clamp<int64_t>(kTaskOutputs / std::max<int64_t>(block_tokens, 1) / kRowChunk * kRowChunk,
                          kRowChunk, kMaxTaskRows);
  size_t n_tasks = 0;
  for (const MatmulTarget &target : targets) {
    const Weight &w = *target.w;
    if (w.cols != in.cols() ||
        (target.up != nullptr &&
         (target.up->cols != w.cols || target.up->rows != w.rows || target.up->type != w.type)))
      fail(BONSAI_ERR_INTERNAL, "matmul shapes disagree for " + w.label());
    const int kind = static_cast<int>(weight_kind(w.type));
    PreparedTarget p;
    p.target = target;
    p.kernel = kernels_.rows[kind];
    QuantLayout layout = kernels_.layout[kind];
    if (w.tiled != TileFormat::None) {
      // Tasks cover whole tiles: task_rows is a multiple of kRowChunk.
      static_assert(kRowChunk % kTileRows == 0);
      const TiledKernel &tiled = kernels_.tiled[kind];
      if (w.rows % kTileRows != 0 || tiled.rows == nullptr || tiled.format != w.tiled)
        fail(BONSAI_ERR_INTERNAL, "a tiled weight this kernel set cannot read: " + w.label());
      p.kernel = tiled.rows;
      layout = tiled.layout;
    }
    if (kernels_.quantized_input[kind]) {
      if (w.cols % kActBlock != 0)
        fail(BONSAI_ERR_INTERNAL, "quantized kernels need whole 128-blocks: " + w.label());
      p.q = &in.quantized(layout, kernels_.quantize, arena_);
    }
    p.row_chunks = (w.rows + task_rows - 1) / task_rows;
    p.first_task = n_tasks;
    n_tasks += static_cast<size_t>(p.row_chunks * token_blocks);
    prepared.push_back(p);
  }

  const auto run_task = [&](size_t task) {
    size_t ti = 0;
    while (ti + 1 < prepared.size() && task >= prepared[ti + 1].first_task)
      ++ti;
    const PreparedTarget &p = prepared[ti];
    const int64_t local = static_cast<int64_t>(task - p.first_task);
    // Token blocks vary fastest, so consecutive tasks reuse the same rows.
    const int64_t r0 = (local / token_blocks) * task_rows;
    const int64_t r1 = std::min(r0 + task_rows, p.target.w->rows);
    const int t0 = static_cast<int>((local % token_blocks) * kTokenBlock);
    const int t1 = std::min(t0 + kTokenBlock, in.n_tokens());
    RowJob job = make_job(*p.target.w, p.q, in, r0, r1, t0, t1);
    float *y = p.target.y + static_cast<int64_t>(t0) * p.target.ldy + r0;
    if (p.target.up == nullptr) {
      job.y = y;
      job.ldy = p.target.ldy;
      p.kernel(job);
      return;
    }
    // task_rows * tokens <= kTaskOutputs by construction.
    float gate[kTaskOutputs];
    float up[kTaskOutputs];
    const int64_t ld = r1 - r0;
    job.y = gate;
    job.ldy = ld;
    p.kernel(job);
    RowJob up_job = make_job(*p.target.up, p.q, in, r0, r1, t0, t1);
    up_job.y = up;
    up_job.ldy = ld;
    p.kernel(up_job);
    for (int t = 0; t < job.n_tokens; ++t)
      for (int64_t r = 0; r < job.n_rows; ++r)
        y[t * p.target.ldy + r] = silu_times(gate[t * ld + r], up[t * ld + r], kernels_.exact);
  };

  arena_.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, n_tasks, 1),
        [&](const tbb::blocked_range<size_t> &range) {
          for (size_t task = range.begin(); task != range.end(); ++task)
            run_task(task);
        },
        tbb::simple_partitioner());
  });
}

} // namespace bonsai::cpu

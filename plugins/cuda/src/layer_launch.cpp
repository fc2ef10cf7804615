#include "layer_launch.hpp"

namespace bonsai::cuda {
namespace {

constexpr unsigned kNormThreads = 256;

// The int8 path's per-token input staging (option int8_input=token), or 0.
CUdeviceptr staging(const Context &ctx, const BoundModel &m) {
  return ctx.options.int8_input_per_token ? m.act.int8_input.get() : 0;
}

} // namespace

void launch_rmsnorm(const Context &ctx, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr out,
                    int n_tokens, int n, float eps) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(n_tokens);
  shape.block_x = kNormThreads;
  launch(*ctx.device, ctx.kernels->get("bonsai_rmsnorm"), shape, x, weight, out, n, eps);
}

void normed_matmuls(const Context &ctx, const BoundModel &m, const MatmulGroup &group,
                    CUdeviceptr norm, int n) {
  const Device &dev = *ctx.device;
  const Kernels &k = *ctx.kernels;
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  if (n <= kMaxInt8GemvTokens &&
      launch_int8_group(dev, k, group, {a.x.get(), norm, d.rms_eps, staging(ctx, m), n}, false))
    return;
  launch_rmsnorm(ctx, a.x.get(), norm, a.h.get(), n, d.n_embd, d.rms_eps);
  for (int i = 0; i < group.n; ++i)
    launch_matmul(dev, k, *group.weights[i], {a.h.get(), group.outs[i], n, a.int8_input.get()},
                  false);
}

void residual_matmul(const Context &ctx, const BoundModel &m, const Weight &w, CUdeviceptr in,
                     CUdeviceptr out, int n) {
  const Device &dev = *ctx.device;
  const Kernels &k = *ctx.kernels;
  if (n <= kMaxInt8GemvTokens &&
      launch_int8_group(dev, k, single_matmul(w, out), {in, 0, 0.0f, staging(ctx, m), n}, true))
    return;
  launch_matmul(dev, k, w, {in, out, n, m.act.int8_input.get()}, true);
}

} // namespace bonsai::cuda

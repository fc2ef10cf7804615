#include "context.hpp"

#include <algorithm>

#include <cstdlib>

#include <oneapi/tbb/info.h>

#include "plugin_error.hpp"

namespace bonsai::cpu {

const Weight *Context::find_weight(const bonsai_weight *handle) const {
  const auto *key = reinterpret_cast<const Weight *>(handle);
  const auto it = weights.find(key);
  return it == weights.end() ? nullptr : it->second.get();
}

std::unique_ptr<Context> make_context(const bonsai_context_desc &desc) {
  if (desc.device_index != 0)
    fail_invalid(strformat("device_index %d does not exist: the CPU plugin has one device (0)",
                           desc.device_index));
  if (desc.max_context < 1)
    fail_invalid(strformat("max_context is %d; it must be at least 1", desc.max_context));
  if (desc.max_batch < 1)
    fail_invalid(strformat("max_batch is %d; it must be at least 1", desc.max_batch));
  // An arena reserves a slot per thread: refuse absurd counts up front.
  constexpr int kMaxThreads = 1024;
  if (desc.n_threads < 0 || desc.n_threads > kMaxThreads)
    fail_invalid(strformat("n_threads is %d; it must be in 0..%d (0 = the plugin's choice)",
                           desc.n_threads, kMaxThreads));

  const ContextOptions options = parse_options(desc.options, std::getenv("BONSAI_CPU_KERNELS"));
  const CpuFeatures &cpu = cpu_features();
  const KernelSelection selection = select_kernel_set(options.kernels, cpu);

  auto ctx = std::make_unique<Context>();
  ctx->max_context = desc.max_context;
  ctx->max_batch = desc.max_batch;
  // More threads than the process may run only queue up (and oneTBB warns
  // on stderr): clamp to what this process has, and say so.
  const int available = oneapi::tbb::info::default_concurrency();
  ctx->n_threads = desc.n_threads > 0 ? std::min(desc.n_threads, available) : available;
  ctx->log = Logger(desc.log, desc.log_user_data, desc.log_level);
  if (desc.n_threads > available)
    ctx->log.warn(strformat("bonsai_cpu: n_threads %d is more than the %d hardware threads this "
                            "process may use; using %d",
                            desc.n_threads, available, available));
  ctx->kernels = selection.set;
  ctx->kv_choice = options.kv;
  ctx->arena = std::make_unique<oneapi::tbb::task_arena>(ctx->n_threads);

  for (const std::string &warning : options.warnings)
    ctx->log.warn("bonsai_cpu: " + warning);
  ctx->log.debug(strformat("bonsai_cpu: kernel set '%s' (%s; kernels=%s from %s); CPU '%s' with "
                           "%s; %d threads",
                           selection.set->name, selection.reason.c_str(),
                           kernel_choice_name(options.kernels), options.kernels_source.c_str(),
                           cpu.brand.c_str(), cpu.describe().c_str(), ctx->n_threads));
  return ctx;
}

} // namespace bonsai::cpu

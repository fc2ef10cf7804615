#include "context.hpp"

#include <cstdlib>

#include "build_id.hpp"
#include "driver_library.hpp"
#include "plugin_error.hpp"
#include "probe.hpp"
#include "tune_timer.hpp"

namespace bonsai::cuda {
namespace {

// A cache write takes milliseconds; a temporary file this old was left by a
// process that died between write and rename.
constexpr std::chrono::seconds kStaleTempAge{3600};

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// The decode tuner's keys, stamp and cache folder, and whether the driver
// times the stream (only probed when decode=auto would tune).
void setup_tuner(Context &ctx, const DeviceFacts &facts, const CacheLocation &location) {
  TuneSetup &t = ctx.tuner;
  t.device = strformat("%s, sm_%d%d, %d SMs", facts.name.c_str(), facts.compute_major,
                       facts.compute_minor, facts.multiprocessors);
  ctx.device->check(ctx.device->api().cuDriverGetVersion(&t.driver_version), "cuDriverGetVersion");
  t.build = plugin_build_id(BONSAI_CUDA_PLUGIN_VERSION);
  if (const char *dir = std::getenv("BONSAI_CUDA_TUNE_DIR"); location.enabled && dir && *dir)
    t.cache.emplace(dir);
  else if (location.enabled)
    t.cache.emplace(tune_cache_dir(location.dir));
  if (ctx.options.decode != DecodeMode::automatic || ctx.options.tuning.tune == TuneMode::off)
    return;
  t.timing_error = stream_timing_error(*ctx.device);
  if (!t.timing_error.empty())
    ctx.log.info("decode=auto: the decode paths cannot be timed (" + t.timing_error +
                 "): each step takes the fixed choice, without tuning");
}

// Whether to build the persistent kernel: where decode asks for it, and
// under decode=auto wherever the tuner can time it against the graph path
// (sm_70+; the fixed choice takes it on sm_90+ only).
bool persistent_program_wanted(const Context &ctx, int compute_major) {
  return persistent_decode_wanted(ctx.options.decode, compute_major) ||
         (ctx.options.decode == DecodeMode::automatic && ctx.tuner.timing_error.empty());
}

void setup_device_objects(Context &ctx, int device_index, const DeviceFacts &facts) {
  CurrentContext current(*ctx.device);
  const CacheLocation location = resolve_cache_location(!ctx.options.ptx_cache);
  setup_tuner(ctx, facts, location);
  if (location.enabled) {
    ctx.cache = std::make_unique<PtxCache>(location.dir, ctx.log);
    ctx.log.debug(
        strformat("PTX cache: %s (%s)", location.dir.string().c_str(), location.reason.c_str()));
    if (const int stale = ctx.cache->remove_stale_temps(kStaleTempAge); stale > 0)
      ctx.log.info(strformat("PTX cache: removed %d unfinished temporary file%s", stale,
                             stale == 1 ? "" : "s"));
  } else {
    ctx.log.info("PTX cache off: " + location.reason);
  }
  KernelLoadConfig kernel_config{
      strformat("compute_%d%d", facts.compute_major, facts.compute_minor),
      facts.compute_major,
      ctx.cache.get(),
      ctx.log,
      ctx.options.tensor_cores,
      ctx.options.prefill_int8,
      ctx.options.int8_gemv,
      persistent_program_wanted(ctx, facts.compute_major),
      ctx.options.tensor_cores && ctx.options.attention_tc,
      facts.shared_per_block_optin};
  kernel_config.persistent_held = ctx.options.persistent_held_records;
  ctx.kernels = std::make_unique<Kernels>(*ctx.device, kernel_config);
  ctx.stager = std::make_unique<UploadStager>(*ctx.device, ctx.log, ctx.options.upload_chunk_bytes);
  if (ctx.options.programmatic_launch) {
    if (facts.compute_major < 9)
      ctx.log.warn(strformat("pdl=on: programmatic dependent launch needs sm_90 or newer, this "
                             "device is sm_%d%d; launching without it",
                             facts.compute_major, facts.compute_minor));
    else if (ctx.device->api().cuLaunchKernelEx == nullptr)
      ctx.log.warn("pdl=on: the driver lacks cuLaunchKernelEx (CUDA 11.8+); launching without "
                   "programmatic dependent launch");
    else
      ctx.device->set_programmatic_launch(true);
  }

  const auto [free_bytes, total_bytes] = ctx.device->memory_info();
  ctx.log.info(strformat(
      "CUDA device %d: %s, sm_%d%d, %.0f MiB free of %.0f MiB%s%s%s%s%s%s%s, %s KV cache",
      device_index, facts.name.c_str(), facts.compute_major, facts.compute_minor, mib(free_bytes),
      mib(total_bytes), ctx.options.use_graphs ? ", decode steps as CUDA graphs" : "",
      ctx.kernels->int8_gemv() ? ", int8 decode GEMVs" : "",
      ctx.kernels->tensor_cores() ? ", prefill on tensor cores" : "",
      ctx.kernels->int8_mma() ? ", prefill on int8 tensor cores" : "",
      ctx.kernels->attention_tc() ? ", prefill attention on tensor cores" : "",
      ctx.kernels->persistent() ? ", persistent decode" : "",
      ctx.device->programmatic_launch() ? ", programmatic dependent launch" : "",
      ctx.options.kv_f16 ? "f16" : "f32"));
}

} // namespace

const Weight *Context::find_weight(const bonsai_weight *handle) const {
  const auto it = weights.find(reinterpret_cast<const Weight *>(handle));
  return it == weights.end() ? nullptr : it->second.get();
}

void discard_step(Context &ctx) {
  const bool was_open = ctx.step.open;
  ctx.step = StepState{};
  if (was_open)
    ctx.device->synchronize();
}

void Context::release_device_objects() {
  stager.reset(); // waits for the copies into the weights below
  model.reset();
  weights.clear();
  matmul_x.reset();
  matmul_y.reset();
  matmul_int8.reset();
  kernels.reset();
}

std::unique_ptr<Context> make_context(const bonsai_context_desc &desc) {
  if (desc.max_context < 1 || desc.max_batch < 1)
    fail_invalid(strformat("create_context: max_context (%d) and max_batch (%d) must be >= 1",
                           desc.max_context, desc.max_batch));
  auto ctx = std::make_unique<Context>();
  ctx->max_context = desc.max_context;
  ctx->max_batch = desc.max_batch;
  ctx->log = Logger(desc.log, desc.log_user_data, desc.log_level);
  ctx->options = parse_options(desc.options);
  for (const std::string &warning : ctx->options.warnings)
    ctx->log.warn(warning);

  const DriverLoad driver = load_driver();
  DeviceFacts facts;
  if (const std::string why = query_device(driver, desc.device_index, &facts); !why.empty())
    fail(BONSAI_ERR_NO_DEVICE, "CUDA plugin: no usable device: " + why);
  // The kernels put a step's tokens on the grid's y dimension.
  if (desc.max_batch > facts.max_grid_y)
    fail_invalid(strformat("create_context: max_batch %d exceeds %d, the most tokens one CUDA step "
                           "can launch on %s (the grid's y limit)",
                           desc.max_batch, facts.max_grid_y, facts.name.c_str()));
  ctx->device = std::make_unique<Device>(*driver.api, desc.device_index);
  try {
    setup_device_objects(*ctx, desc.device_index, facts);
  } catch (...) {
    // Kernels hold modules of the device's context: free them with it
    // current, or leave them to the driver when it cannot be made current.
    try {
      CurrentContext current(*ctx->device);
      ctx->release_device_objects();
    } catch (const std::exception &) {
      ctx->device->abandon();
    }
    throw; // the first failure, which says why the context could not be made
  }
  return ctx;
}

} // namespace bonsai::cuda

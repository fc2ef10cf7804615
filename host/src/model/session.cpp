#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/log_internal.hpp"
#include "model/hybrid_layer_runner.hpp"
#include "model/matmul_layer_runner.hpp"
#include "model/plugin_hybrid_runner.hpp"
#include "model/plugin_layer_runner.hpp"
#include "model/session_impl.hpp"
#include "plugins/layer_kinds.hpp"

namespace bonsai {
namespace {

// Clears a pending cancel() when the call it applied to returns.
struct CancelConsumer {
  std::atomic<bool> &flag;
  ~CancelConsumer() { flag.store(false); }
};

} // namespace

Session Engine::create_session() const {
  return create_session(SessionOptions{});
}

namespace {

// A session on one plugin: context, weights, bound model. Throws (and frees
// whatever it made) when any of them fails.
std::unique_ptr<Session::Impl>
open_session_on(const std::shared_ptr<const Engine::Impl> &engine_impl,
                const host::SelectedPlugin &plugin, const ProgressFn &on_progress) {
  const auto start = std::chrono::steady_clock::now();
  const Engine::Impl &engine = *engine_impl;
  auto session = std::make_unique<Session::Impl>();
  session->engine = engine_impl;

  host::ContextConfig config;
  config.device_index = engine.options.device_index;
  config.max_context = engine.options.n_ctx;
  config.max_batch = engine.options.n_batch;
  config.n_threads = engine.options.n_threads;
  config.options = engine.options.plugin_options;
  session->context = std::make_unique<host::PluginContext>(plugin.library, config);
  const host::PluginContext &context = *session->context;

  const ProgressFn &progress = on_progress ? on_progress : engine.options.on_progress;
  host::upload_model(context, engine.mapping, engine.spec, progress, session->weights);
  const auto &api = context.api();
  // A plugin built against ABI 1.0 cannot be told about scaled RoPE: its
  // layers would silently compute another model, so the host runs them.
  const bool rope_unknown_to_plugin = rope_is_scaled(engine.spec.hparams.rope) && api.abi_minor < 1;
  if (rope_unknown_to_plugin)
    host::logger().warn("plugin {} was built against ABI 1.{}, which cannot pass scaled RoPE ({}); "
                        "the host runs the layers through its matmul (slower)",
                        plugin.info.name, api.abi_minor, engine.spec.hparams.rope.describe());
  // qwen35 binds through the ABI 1.2 layer kinds; bind_model cannot describe it.
  const bool hybrid = engine.spec.arch() == Architecture::qwen35;
  const bonsai_layer_kinds_extension *kinds = hybrid ? host::qwen35_layer_kinds(api) : nullptr;
  const bonsai_status bind =
      hybrid ? (kinds != nullptr
                    ? kinds->bind_layered_model(context.get(), &session->weights.layered.desc)
                    : BONSAI_ERR_UNSUPPORTED)
      : api.bind_model != nullptr && !rope_unknown_to_plugin
          ? api.bind_model(context.get(), &session->weights.desc)
          : BONSAI_ERR_UNSUPPORTED;
  if (hybrid && bind == BONSAI_OK) {
    session->runner = std::make_unique<host::PluginHybridRunner>(
        context, *kinds, static_cast<int32_t>(engine.spec.hparams.n_layer), engine.options.n_batch);
    session->plugin_layers = true;
  } else if (hybrid && bind == BONSAI_ERR_UNSUPPORTED) {
    host::logger().info("qwen35: plugin {} {}; the host runs the gated DeltaNet and attention "
                        "layers through its matmul (slower)",
                        plugin.info.name,
                        kinds == nullptr ? "has no gated DeltaNet layers (ABI 1.2 layer kinds)"
                                         : "declined this model's layers");
    session->runner = std::make_unique<host::HybridLayerRunner>(
        context, engine.spec, session->weights,
        host::MatmulRunnerConfig{engine.options.n_ctx, engine.options.n_batch});
  } else if (!hybrid && bind == BONSAI_OK) {
    session->runner = std::make_unique<host::PluginLayerRunner>(
        context, static_cast<int32_t>(engine.spec.hparams.n_layer));
    session->plugin_layers = true;
  } else if (!hybrid && bind == BONSAI_ERR_UNSUPPORTED) {
    if (!rope_unknown_to_plugin)
      host::logger().info("plugin {} does not run whole layers; the host runs them through its "
                          "matmul (slower)",
                          plugin.info.name);
    session->runner = std::make_unique<host::MatmulLayerRunner>(
        context, engine.spec, session->weights,
        host::MatmulRunnerConfig{engine.options.n_ctx, engine.options.n_batch});
  } else {
    context.check(bind, hybrid ? "bind_layered_model" : "bind_model");
  }
  session->upload_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return session;
}

} // namespace

std::unique_ptr<Session::Impl> open_session(const std::shared_ptr<const Engine::Impl> &engine_impl,
                                            const ProgressFn &on_progress) {
  const Engine::Impl &engine = *engine_impl;
  for (size_t i = engine.active.load();; ++i) {
    const host::SelectedPlugin &plugin = engine.plugins[i];
    try {
      return open_session_on(engine_impl, plugin, on_progress);
    } catch (const PluginError &error) {
      // A plugin that probed fine can still fail on this model (device
      // memory, kernel compilation, a refused module): before any token is
      // generated, the next usable plugin takes over, for later sessions too.
      if (i + 1 >= engine.plugins.size())
        throw;
      const PluginInfo &next = engine.plugins[i + 1].info;
      host::logger().warn("backend {} cannot run this model: {}; falling back to {} ({})",
                          plugin.info.name, error.what(), next.name, next.path.string());
      size_t expected = i;
      engine.active.compare_exchange_strong(expected, i + 1);
    }
  }
}

Session Engine::create_session(const SessionOptions &options) const {
  return Session(open_session(impl_, options.on_progress));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;
Session::~Session() = default;

void Session::Impl::check_fits(int64_t position, int64_t extra, const char *what) const {
  if (position + extra > n_ctx())
    throw ContextFullError(
        fmt::format("{}: {} tokens at position {} do not fit the context window of {} tokens", what,
                    extra, position, n_ctx()));
}

void Session::Impl::truncate_to(int32_t n) {
  pending.reset();
  if (mtp)
    mtp->trunk_truncated(n);
  if (n < static_cast<int32_t>(history.size())) {
    try {
      runner->truncate(n);
    } catch (...) {
      // A runner that rebuilds state (qwen35) may stop part-way: the history
      // keeps what the cache holds, so the next call starts from the truth.
      history.resize(std::min(history.size(), static_cast<size_t>(runner->kv_length())));
      throw;
    }
    history.resize(static_cast<size_t>(n));
  }
}

bool Session::Impl::run_tokens(std::span<const int32_t> tokens, Want want,
                               std::vector<float> *logits, int32_t *argmax) {
  const int32_t n_vocab = engine->n_vocab();
  const auto total = static_cast<int32_t>(tokens.size());
  if (logits != nullptr) {
    const size_t rows = want == Want::all_logits ? tokens.size() : 1;
    logits->resize(rows * static_cast<size_t>(n_vocab));
  }
  pending.reset();
  for (int32_t done = 0; done < total;) {
    const int32_t n = std::min(n_batch(), total - done);
    const bool last_step = done + n == total;
    host::StepOutputs outputs;
    if (want == Want::all_logits) {
      outputs = {0, n, logits->data() + static_cast<size_t>(done) * n_vocab, nullptr};
      outputs.may_cut_back = true; // a row per token: verifying drafted tokens
    } else if (last_step && want == Want::last_logits) {
      outputs = {n - 1, 1, logits->data(), nullptr};
    } else if (last_step && want == Want::last_argmax) {
      outputs = {n - 1, 1, nullptr, argmax};
    }
    const auto step = tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(n));
    if (mtp) {
      scratch_hidden.resize(static_cast<size_t>(n) * static_cast<size_t>(engine->model.n_embd));
      outputs.hidden = scratch_hidden.data();
    }
    if (!runner->run_step(step, outputs, cancel_requested))
      return false;
    const auto first = static_cast<int32_t>(history.size());
    history.insert(history.end(), step.begin(), step.end());
    done += n;
    if (mtp) {
      mtp->trunk_ran(first, n, scratch_hidden.data());
      // A long prompt: the layer reads what it can now, so that the hidden
      // states held stay within a step's.
      if (mtp->unread() > n_batch())
        mtp->sync(history, false, scratch_logits, scratch_hidden);
    }
  }
  return true;
}

EvalResult Session::eval(std::span<const int32_t> tokens, const EvalOptions &options) {
  CancelConsumer consume{impl_->cancel_requested};
  if (tokens.empty())
    throw InvalidArgument("eval: no tokens given");
  impl_->engine->check_tokens(tokens, "eval");
  impl_->check_fits(position(), static_cast<int64_t>(tokens.size()), "eval");
  EvalResult result;
  result.n_vocab = impl_->engine->n_vocab();
  const auto want = options.all_logits ? Impl::Want::all_logits : Impl::Want::last_logits;
  if (!impl_->run_tokens(tokens, want, &result.logits, nullptr))
    throw CancelledError("eval was cancelled");
  result.n_outputs = options.all_logits ? static_cast<int32_t>(tokens.size()) : 1;
  return result;
}

int32_t Session::eval_argmax(std::span<const int32_t> tokens) {
  CancelConsumer consume{impl_->cancel_requested};
  if (tokens.empty())
    throw InvalidArgument("eval_argmax: no tokens given");
  impl_->engine->check_tokens(tokens, "eval_argmax");
  impl_->check_fits(position(), static_cast<int64_t>(tokens.size()), "eval_argmax");
  int32_t best = -1;
  if (!impl_->run_tokens(tokens, Impl::Want::last_argmax, nullptr, &best))
    throw CancelledError("eval was cancelled");
  return best;
}

std::vector<float> Session::decode_step(int32_t token) {
  const int32_t one[1] = {token};
  return std::move(eval(one).logits);
}

void Session::cancel() {
  impl_->cancel_requested.store(true);
}

void Session::reset() {
  impl_->truncate_to(0);
}

void Session::truncate(int32_t n) {
  if (n < 0 || n > position())
    throw InvalidArgument(
        fmt::format("truncate: {} is outside [0, {}] (the current position)", n, position()));
  impl_->truncate_to(n);
}

int32_t Session::position() const {
  return static_cast<int32_t>(impl_->history.size());
}
const std::vector<int32_t> &Session::tokens() const {
  return impl_->history;
}
int32_t Session::n_ctx() const {
  return impl_->n_ctx();
}
bool Session::plugin_runs_layers() const {
  return impl_->plugin_layers;
}
double Session::upload_ms() const {
  return impl_->upload_ms;
}

} // namespace bonsai

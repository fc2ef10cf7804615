// Server lifecycle: options check, binding, the background model load, and
// an orderly shutdown (stop taking work, drain, close the connections).
#include <cmath>
#include <csignal>
#include <filesystem>

#include <fmt/format.h>

#include "base/server_log.hpp"
#include "bonsai/batch.hpp"
#include "server_impl.hpp"

namespace bonsai::server {
namespace {

// After the scheduler has drained, how long answers may take to reach their
// clients before every connection is closed.
constexpr std::chrono::milliseconds kFlush{500};

void check_options(const ServerOptions &o) {
  auto require = [](bool ok, const std::string &message) {
    if (!ok)
      throw ServerError(message);
  };
  require(o.port >= 0 && o.port <= 65535, fmt::format("port {} is not in 0..65535", o.port));
  require(o.parallel >= 1 && o.parallel <= 256,
          fmt::format("parallel is {}; it must be in 1..256", o.parallel));
  require(o.max_queue >= 0, fmt::format("the queue size is {}; it must be >= 0", o.max_queue));
  require(o.prefill_chunk >= 1,
          fmt::format("the prefill chunk is {}; it must be >= 1", o.prefill_chunk));
  require(o.itl_budget == 0.0 || (o.itl_budget >= 1.0 && std::isfinite(o.itl_budget)),
          fmt::format("the inter-token budget is {}; it must be 0 (off) or a number >= 1",
                      o.itl_budget));
  require(o.max_body_bytes >= 1, "the body size limit must be at least 1 byte");
  require(o.max_header_bytes >= 1024 && o.max_header_bytes <= (1u << 20),
          "the header size limit must be in 1 KiB..1 MiB");
  require(o.max_header_count >= 1, "the header count limit must be >= 1");
  require(o.max_connections >= 1 && o.max_connections_per_client >= 1,
          "the connection limits must be >= 1");
  require(o.request_timeout.count() >= 1 && o.read_timeout.count() >= 1 &&
              o.write_timeout.count() >= 1 && o.idle_timeout.count() >= 1,
          "timeouts must be at least 1 second");
  require(o.json.max_depth >= 2 && o.json.max_string_bytes >= 1 && o.json.max_array_items >= 1 &&
              o.json.max_object_fields >= 1,
          "the JSON limits must allow a body object with a field (depth >= 2, others >= 1)");
  require(o.max_prompt_bytes >= 1, "the prompt size limit must be at least 1 byte");
  require(o.max_stop_strings >= 0 && o.max_stop_string_bytes >= 1,
          "the stop-string limits must be >= 0 strings and >= 1 byte");
  require(o.http_threads >= 0, "http_threads must be >= 0");
  require(o.draft.ngram >= 0,
          fmt::format("the draft n-gram is {}; it must be >= 0", o.draft.ngram));
  require(o.draft.min >= 1 && o.draft.min <= o.draft.max,
          fmt::format("the draft lengths need 1 <= min <= max, got min {}, max {}", o.draft.min,
                      o.draft.max));
  require(o.draft.p_min >= 0.0f && o.draft.p_min <= 1.0f,
          fmt::format("the draft's p_min is {}; it must be in [0, 1]", o.draft.p_min));
  require(!(o.draft.mtp && o.draft_model),
          "a draft model and the MTP draft exclude each other; choose one");
  require(!o.host.empty(), "the listen address is empty");
  for (const std::string &key : o.api_keys)
    require(!key.empty() && key.find_first_of(" \t\r\n") == std::string::npos,
            "an API key is empty or holds white space");
}

// A write to a client that has gone away must fail, not kill the process.
void ignore_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
}

std::string model_id_of(const ServerOptions &options, const Engine &engine) {
  if (!options.model_id.empty())
    return options.model_id;
  return engine.model().path.stem().string();
}

HttpServerOptions http_options(const ServerOptions &o) {
  HttpServerOptions h;
  h.host = o.host;
  h.port = o.port;
  h.limits.max_body_bytes = o.max_body_bytes;
  h.limits.max_header_bytes = o.max_header_bytes;
  h.limits.max_header_count = o.max_header_count;
  h.limits.request_timeout = o.request_timeout;
  h.limits.read_timeout = o.read_timeout;
  h.limits.write_timeout = o.write_timeout;
  h.limits.idle_timeout = o.idle_timeout;
  h.max_connections = o.max_connections;
  h.max_connections_per_client = o.max_connections_per_client;
  h.max_bodies_in_flight_bytes = o.max_bodies_in_flight_bytes;
  return h;
}

RequestContext request_context(const ServerOptions &o, const std::string &model_id,
                               const Engine &engine) {
  RequestContext context;
  context.model_id = model_id;
  context.n_vocab = engine.n_vocab();
  context.json = o.json;
  context.max_prompt_bytes = o.max_prompt_bytes;
  context.max_stop_strings = o.max_stop_strings;
  context.max_stop_string_bytes = o.max_stop_string_bytes;
  context.reasoning_format = o.reasoning_format;
  context.reasoning_budget = o.reasoning_budget;
  context.n_predict = o.n_predict;
  context.draft = o.draft;
  context.draft.model = nullptr;
  return context;
}

void fail_load(Server::Impl &impl, std::string why) {
  if (why.empty())
    why = "unknown error";
  // Debug only: the caller reports load_error() (the CLI prints it once).
  log_at(LogLevel::debug, "the model could not be loaded: {}", why);
  std::lock_guard lock(impl.mutex);
  impl.load_error = std::move(why);
  ServerState expected = ServerState::loading;
  impl.state.compare_exchange_strong(expected, ServerState::failed);
}

void load_model(Server::Impl &impl, const Server::EngineLoader &load) {
  try {
    Engine engine = load();
    BatchOptions batch_options;
    batch_options.max_sequences = impl.options.parallel;
    // Set, so that a progress callback the loader gave the engine is not
    // called from this thread.
    batch_options.on_progress = [](double) {};
    batch_options.mtp = impl.options.draft.mtp;
    log_at(LogLevel::info, "uploading the weights for {} slots", impl.options.parallel);
    SchedulerOptions scheduler_options;
    scheduler_options.max_queue = impl.options.max_queue;
    scheduler_options.prefill_chunk = impl.options.prefill_chunk;
    scheduler_options.itl_budget = impl.options.itl_budget;
    if (impl.options.draft.mtp)
      scheduler_options.mtp_p_min = impl.options.draft.p_min;
    std::unique_ptr<Drafter> draft;
    if (impl.options.draft_model) {
      log_at(LogLevel::info, "loading the draft model");
      draft = std::make_unique<DraftModel>(impl.options.draft_model(), impl.options.parallel,
                                           engine.n_vocab(), impl.options.draft.p_min);
    }
    auto scheduler = std::make_unique<Scheduler>(engine.create_batch(batch_options),
                                                 scheduler_options, impl.metrics, std::move(draft));
    std::lock_guard lock(impl.mutex);
    impl.model_id = model_id_of(impl.options, engine);
    impl.request_context = request_context(impl.options, impl.model_id, engine);
    impl.engine = std::move(engine);
    impl.scheduler = std::move(scheduler);
    ServerState expected = ServerState::loading;
    if (impl.state.compare_exchange_strong(expected, ServerState::ready)) {
      impl.metrics.set_ready(true);
      log_at(LogLevel::info, "model '{}' ready: {} slots of {} tokens", impl.model_id,
             impl.options.parallel, impl.scheduler->n_ctx());
    }
  } catch (const std::exception &error) {
    fail_load(impl, error.what());
  } catch (...) {
    fail_load(impl, "the loader threw something that is not a std::exception");
  }
  {
    std::lock_guard lock(impl.mutex);
    impl.load_finished = true;
  }
  impl.changed.notify_all();
}

OriginPolicyOptions origin_options(const ServerOptions &o) {
  return {o.allowed_hosts, o.cors_origins};
}

} // namespace

Server::Impl::Impl(ServerOptions server_options)
    : options(std::move(server_options)), origin_policy(origin_options(options), options.host),
      metrics(options.vllm_metrics),
      workers(options.http_threads > 0 ? static_cast<size_t>(options.http_threads) : 2) {}

Server::Server(ServerOptions options, EngineLoader load) {
  check_options(options);
  ignore_sigpipe();
  impl_ = std::make_unique<Impl>(std::move(options));
  Impl &impl = *impl_;
  impl.started_unix = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  impl.http = std::make_unique<HttpServer>(http_options(impl.options), impl);
  impl.http->start();
  impl.loader = std::thread([&impl, load = std::move(load)] { load_model(impl, load); });
  log_at(LogLevel::info, "listening on http://{}:{}", impl.options.host, impl.http->port());
}

Server::~Server() {
  shutdown(std::chrono::milliseconds(0));
  wait();
}

int Server::port() const {
  return impl_->http->port();
}

bool Server::ready() const {
  return impl_->state.load() == ServerState::ready;
}

std::string Server::load_error() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->load_error;
}

void Server::wait_loaded() const {
  std::unique_lock lock(impl_->mutex);
  impl_->changed.wait(lock, [&] { return impl_->load_finished; });
}

void Server::shutdown(std::chrono::milliseconds grace) {
  Impl &impl = *impl_;
  std::call_once(impl.stop_once, [&] {
    impl.state.store(ServerState::stopping);
    impl.metrics.set_ready(false);
    impl.stopper = std::thread([&impl, grace] {
      if (impl.loader.joinable())
        impl.loader.join(); // a load cannot be interrupted; it ends on its own
      if (impl.scheduler)
        impl.scheduler->drain(grace);
      impl.http->stop(kFlush);
      impl.workers.stop();
      impl.workers.join();
      {
        std::lock_guard lock(impl.mutex);
        impl.stop_finished = true;
      }
      impl.changed.notify_all();
    });
  });
}

void Server::wait() {
  Impl &impl = *impl_;
  std::unique_lock lock(impl.mutex);
  impl.changed.wait(lock, [&] { return impl.stop_finished; });
  lock.unlock();
  // Whichever waiter gets here first joins; the thread has ended either way.
  std::lock_guard join_lock(impl.join_mutex);
  if (impl.stopper.joinable())
    impl.stopper.join();
}

} // namespace bonsai::server

// Server lifecycle: options check, binding, the background model load, and
// an orderly shutdown (stop taking work, drain, close the listener).
#include <sys/socket.h>

#include <csignal>
#include <filesystem>

#include <fmt/format.h>

#include "bonsai/batch.hpp"
#include "listen_backlog.hpp"
#include "server_impl.hpp"
#include "server_log.hpp"

namespace bonsai::server {
namespace {

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
  require(o.max_body_bytes >= 1, "the body size limit must be at least 1 byte");
  require(o.read_timeout.count() >= 1 && o.write_timeout.count() >= 1 &&
              o.idle_timeout.count() >= 1,
          "timeouts must be at least 1 second");
  require(o.http_threads >= 0, "http_threads must be >= 0");
  require(!o.host.empty(), "the listen address is empty");
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
    log_at(LogLevel::info, "uploading the weights for {} slots", impl.options.parallel);
    SchedulerOptions scheduler_options;
    scheduler_options.max_queue = impl.options.max_queue;
    scheduler_options.prefill_chunk = impl.options.prefill_chunk;
    auto scheduler = std::make_unique<Scheduler>(engine.create_batch(batch_options),
                                                 scheduler_options, impl.metrics);
    std::lock_guard lock(impl.mutex);
    impl.model_id = model_id_of(impl.options, engine);
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
  impl.loaded.notify_all();
}

} // namespace

Server::Server(ServerOptions options, EngineLoader load) : impl_(std::make_unique<Impl>()) {
  check_options(options);
  ignore_sigpipe();
  Impl &impl = *impl_;
  impl.options = std::move(options);
  impl.started_unix = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const ServerOptions &o = impl.options;
  const size_t threads =
      o.http_threads > 0 ? static_cast<size_t>(o.http_threads)
                         : static_cast<size_t>(o.parallel) + static_cast<size_t>(o.max_queue) + 4;
  impl.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl.http.set_read_timeout(o.read_timeout.count(), 0);
  impl.http.set_write_timeout(o.write_timeout.count(), 0);
  impl.http.set_keep_alive_timeout(o.idle_timeout.count());
  impl.http.set_payload_max_length(o.max_body_bytes);
  impl.http.set_tcp_nodelay(true); // streamed tokens go out at once
  // SO_REUSEADDR alone: a restart may bind while old connections linger, but
  // unlike cpp-httplib's default (SO_REUSEPORT too) a second server cannot
  // share the port of a running one.
  impl.http.set_socket_options([](socket_t socket) {
    const int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  install_routes(impl);

  impl.port = o.port == 0 ? impl.http.bind_to_any_port(o.host) : o.port;
  if (impl.port < 0 || (o.port != 0 && !impl.http.bind_to_port(o.host, o.port)))
    throw ServerError(fmt::format("cannot listen on {}:{} (address in use, or not an address of "
                                  "this machine)",
                                  o.host, o.port));
  if (!widen_listen_backlog(impl.port))
    log_at(LogLevel::debug,
           "could not raise the listen backlog of port {}; bursts of more than "
           "5 connecting clients may be slow to connect",
           impl.port);
  impl.listener = std::thread([&impl] {
    impl.http.listen_after_bind();
    impl.listener_done.store(true);
  });
  impl.loader = std::thread([&impl, load = std::move(load)] { load_model(impl, load); });
  log_at(LogLevel::info, "listening on http://{}:{}", o.host, impl.port);
}

Server::~Server() {
  shutdown(std::chrono::milliseconds(0));
  wait();
}

int Server::port() const {
  return impl_->port;
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
  impl_->loaded.wait(lock, [&] { return impl_->load_finished; });
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
      // stop() does nothing before the listener has started; repeat it
      // until the listener has ended.
      bool stopped = false;
      while (!impl.listener_done.load()) {
        if (!stopped && impl.http.is_running()) {
          impl.http.stop(); // once: a second call would close no socket twice
          stopped = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  });
}

void Server::wait() {
  Impl &impl = *impl_;
  if (impl.listener.joinable())
    impl.listener.join();
  // The listener also ends when it fails on its own; finish the shutdown.
  shutdown(std::chrono::milliseconds(0));
  if (impl.stopper.joinable())
    impl.stopper.join();
}

} // namespace bonsai::server

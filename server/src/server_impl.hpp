#pragma once
// What a running Server holds, shared by its lifecycle (server.cpp), its
// routes (routes.cpp) and the completion endpoints (completion_handler.cpp).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/thread_pool.hpp>

#include "api/openai/openai_request.hpp"
#include "base/api_error.hpp"
#include "base/metrics.hpp"
#include "bonsai/server.hpp"
#include "http/http_server.hpp"
#include "http/request_policy.hpp"
#include "reply/reply_writer.hpp"
#include "request/field_notes.hpp"
#include "schedule/scheduler.hpp"

namespace bonsai::server {

enum class ServerState { loading, ready, failed, stopping };

struct Server::Impl : HttpApplication {
  Impl(ServerOptions options);

  // HttpApplication (routes.cpp).
  Screening screen(const RequestHead &head) override;
  void serve(const std::shared_ptr<Exchange> &exchange) override;
  bool stopping() const override { return state.load() == ServerState::stopping; }
  void answered(const std::string &path, int status) override;

  // The engine and scheduler, or nullptr while not ready (after ready they
  // live until the Server is destroyed, past every handler).
  Scheduler *ready_scheduler() const {
    return state.load() == ServerState::ready ? scheduler.get() : nullptr;
  }
  // The prompt-cache tenant of a request made with API key number `key`
  // (-1: none), under options.cache_isolation.
  uint64_t tenant_of(int key);

  const ServerOptions options;
  const OriginPolicy origin_policy;
  Metrics metrics;
  int64_t started_unix = 0; // the model's "created" time in /v1/models

  std::atomic<ServerState> state{ServerState::loading};
  mutable std::mutex mutex; // guards what follows
  mutable std::condition_variable changed;
  std::string load_error;
  bool load_finished = false;           // the loader has returned, ready or failed
  bool stop_finished = false;           // the stopper has closed everything
  std::optional<Engine> engine;         // set once ready
  std::unique_ptr<Scheduler> scheduler; // set once ready
  std::string model_id;                 // set once ready
  RequestContext request_context;       // set once ready

  std::atomic<uint64_t> next_private_tenant{1ull << 32}; // above every key's index
  // Request bodies are parsed and prompts tokenized here, off the I/O thread.
  boost::asio::thread_pool workers;
  std::unique_ptr<HttpServer> http;

  std::thread loader;
  std::thread stopper;
  std::once_flag stop_once;
  std::mutex join_mutex; // one wait() joins the stopper
};

// Runs `work`, which reads the request's body, on a worker thread, off the
// I/O thread: an ApiError it throws becomes its error response, any other
// exception a 500. The body's memory and its share of the budget are then
// given back, and what `work` returned runs on the exchange's I/O thread.
using WorkerTask = std::function<std::function<void()>()>;
void run_on_worker(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange, WorkerTask work);

// GET /metrics: the counters, and the scheduler's load at this moment.
HttpResponse metrics_answer(const Server::Impl &impl);

// The 503 for a request that needs the model while it is not ready.
std::optional<HttpResponse> not_serving(const Server::Impl &impl, const std::string &path);

// The compatibility notes of reading a request (field_notes.hpp) as the
// headers its answer carries.
using NoteHeaders = std::vector<std::pair<std::string, std::string>>;
HttpResponse with_notes(HttpResponse response, const NoteHeaders &notes);
// Names the ignored fields and what was left out in the debug log, once per
// request.
void log_field_notes(const FieldNotes &notes, const std::string &path);
// Runs `read` (a request reader) with `notes` bound to this thread, then
// logs them.
template <class Read> auto read_with_notes(FieldNotes &notes, const std::string &path, Read read) {
  auto result = [&] {
    FieldNotesScope scope(notes);
    return read();
  }();
  log_field_notes(notes, path);
  return result;
}

// Starts answering a request that generates, read by `parse` (one API's
// shape), for prompt-cache tenant `tenant`.
void start_generation(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange,
                      RequestParser parse, uint64_t tenant);

} // namespace bonsai::server

#pragma once
// What a running Server holds, shared by its lifecycle (server.cpp), its
// routes (routes.cpp) and the completion endpoints (completion_handler.cpp).
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <httplib.h>

#include "api_error.hpp"
#include "bonsai/server.hpp"
#include "metrics.hpp"
#include "scheduler.hpp"

namespace bonsai::server {

enum class ServerState { loading, ready, failed, stopping };

struct Server::Impl {
  ServerOptions options;
  httplib::Server http;
  Metrics metrics;
  int port = 0;
  int64_t started_unix = 0; // the model's "created" time in /v1/models

  std::atomic<ServerState> state{ServerState::loading};
  mutable std::mutex mutex; // guards what follows
  mutable std::condition_variable loaded;
  std::string load_error;
  bool load_finished = false;           // the loader has returned, ready or failed
  std::optional<Engine> engine;         // set once ready
  std::unique_ptr<Scheduler> scheduler; // set once ready
  std::string model_id;                 // set once ready

  std::thread loader;
  std::thread listener;
  std::atomic<bool> listener_done{false};
  std::thread stopper;
  std::once_flag stop_once;
  std::chrono::milliseconds grace{0};

  // The engine and scheduler, or nullptr while not ready (after ready they
  // live until the Server is destroyed, past every handler).
  Scheduler *ready_scheduler() const {
    return state.load() == ServerState::ready ? scheduler.get() : nullptr;
  }
};

// Registers every endpoint and the server-wide handlers on impl.http.
void install_routes(Server::Impl &impl);

// POST /v1/chat/completions and /v1/completions.
void handle_completion(Server::Impl &impl, Endpoint endpoint, const httplib::Request &request,
                       httplib::Response &response);

// Answers `error` in OpenAI's error shape.
void send_error(httplib::Response &response, const ApiError &error);

} // namespace bonsai::server

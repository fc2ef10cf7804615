#pragma once
// bonsai's OpenAI-compatible HTTP server (`bonsai serve`), embeddable:
//
//   bonsai::server::ServerOptions options;
//   options.port = 8080;
//   bonsai::server::Server server(options, [] {
//     return bonsai::Engine::open("model.gguf", {.n_ctx = 8192});
//   });
//   server.wait(); // until shutdown() (e.g. from a signal watcher)
//
// The listener is up as soon as the constructor returns; /health answers 503
// while `load` runs on a background thread and 200 once the model is ready.
// Endpoints, limits and the scheduler are described in docs/server.md.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bonsai/engine.hpp"

namespace bonsai::server {

struct ServerOptions {
  std::string host = "127.0.0.1"; // listen address; "0.0.0.0" for every interface
  int port = 8080;                // 0: any free port (see Server::port())
  int32_t parallel = 4;           // sequences generated at once (KV slots)
  int32_t max_queue = 64;         // requests waiting for a slot; one more gets 429
  // Prompt tokens read per step while other sequences are decoding, so that
  // their streams keep flowing during a long prompt. With nothing decoding a
  // prompt is read in steps of the engine's n_batch.
  int32_t prefill_chunk = 64;
  std::string api_key;  // non-empty: every /v1 request needs "Authorization: Bearer KEY"
  std::string model_id; // the model's name in the API; empty: the file name without .gguf
  size_t max_body_bytes = 1 << 20;        // larger request bodies get 413
  std::chrono::seconds read_timeout{30};  // a client that sends nothing for this long is dropped
  std::chrono::seconds write_timeout{30}; // a client that reads nothing for this long is dropped
  std::chrono::seconds idle_timeout{5};   // keep-alive connections idle this long are closed
  int32_t http_threads = 0;               // connections served at once; 0: parallel + max_queue + 4
};

// Why a Server could not start (address in use, bad options).
class ServerError : public Error {
public:
  using Error::Error;
};

class Server {
public:
  using EngineLoader = std::function<Engine()>;
  // Binds options.host:options.port and starts serving; `load` runs on a
  // background thread. Throws ServerError when the address cannot be bound
  // or an option is out of range.
  Server(ServerOptions options, EngineLoader load);
  ~Server(); // shutdown() with no grace, then wait()
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  int port() const; // the bound port
  // True once the model is loaded and requests are served.
  bool ready() const;
  // Why loading failed ("" while loading or after success). /health then
  // answers 500 with this message.
  std::string load_error() const;
  // Blocks until the model is loaded or failed to load.
  void wait_loaded() const;
  // Stops taking requests (new ones get 503), lets the running ones finish
  // for up to `grace`, cancels the rest, then closes the listener. Returns at
  // once; wait() blocks until all of that is done. Safe from any thread and
  // more than once.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // Blocks until the server has shut down.
  void wait();

  struct Impl; // internal
private:
  std::unique_ptr<Impl> impl_;
};

} // namespace bonsai::server

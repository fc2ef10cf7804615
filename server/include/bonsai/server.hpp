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
#include <vector>

#include "bonsai/engine.hpp"

namespace bonsai::server {

// Whose requests may share prompt-cache prefixes (see docs/server.md,
// "Security"). A shared prefix is visible: it shortens the time to the first
// token and shows in usage.prompt_tokens_details.cached_tokens.
enum class CacheIsolation {
  key,     // only requests made with the same API key (without keys: all)
  request, // none: every request starts from an empty cache
  off,     // all requests, whatever their key
};

// Where a chat reply's <think> ... </think> block goes (docs/server.md,
// "Reasoning"); a request may ask for another with "reasoning_format".
enum class ReasoningFormat {
  reasoning_content, // message.reasoning_content / delta.reasoning_content (DeepSeek's name)
  reasoning,         // message.reasoning / delta.reasoning
  none,              // left inline in content, tags and all
};

// Limits on the JSON of a request body, enforced while it is parsed.
struct JsonLimits {
  int32_t max_depth = 64;            // nested arrays and objects
  size_t max_string_bytes = 1 << 20; // one string or key
  size_t max_array_items = 131072;   // one array (a prompt of token ids)
  size_t max_object_fields = 1024;   // one object
};

struct ServerOptions {
  std::string host = "127.0.0.1"; // listen address; "0.0.0.0" for every interface
  int port = 8080;                // 0: any free port (see Server::port())
  int32_t parallel = 4;           // sequences generated at once (KV slots)
  int32_t max_queue = 64;         // requests waiting for a slot; one more gets 429
  // Most prompt tokens read per step while other sequences are decoding, so
  // that their streams keep flowing during a long prompt. With nothing
  // decoding a prompt is read in steps of the engine's n_batch.
  int32_t prefill_chunk = 64;
  // While sequences decode, a step that also reads prompt tokens may take at
  // most this many times a decode-only step: the chunk is sized by measured
  // step costs, up to prefill_chunk. 0 turns the pacing off (always
  // prefill_chunk); else >= 1.
  double itl_budget = 1.75;
  // Non-empty: every /v1 request needs "Authorization: Bearer KEY" with one
  // of these keys. Each key is a tenant of the prompt cache (cache_isolation).
  std::vector<std::string> api_keys;
  std::string model_id; // the model's name in the API; empty: the file name without .gguf
  CacheIsolation cache_isolation = CacheIsolation::key;
  ReasoningFormat reasoning_format = ReasoningFormat::reasoning_content;
  // Most tokens of a chat reply's think block before </think> is forced
  // (GenerateRequest::reasoning_budget); -1: no limit. A request may set its
  // own with "reasoning_budget".
  int32_t reasoning_budget = -1;
  // Most tokens any reply may take, whatever its request asks (llama-server's
  // -n); such a reply ends with the API's "length". -1: no limit but the
  // context's.
  int32_t n_predict = -1;

  bool web_ui = true; // the chat page at / (and /chat.js, /chat.css)
  // /metrics also writes the load under vLLM's names (vllm:num_requests_waiting,
  // ...), for routers and dashboards made for vLLM.
  bool vllm_metrics = false;

  // Speculative decoding (docs/speculative.md): each running reply drafts
  // tokens by prompt lookup (draft.ngram > 0), with `draft_model` or with
  // the model's own MTP layer (draft.mtp, qwen35), and the batched step
  // verifies them. draft.max, min, adaptive and p_min as in
  // bonsai::DraftOptions; draft.model is not used. A request may lower the
  // proposals per step ("speculative.n_max", 0: none).
  DraftOptions draft;
  // Opens the draft model (the model's vocabulary, usually a smaller model);
  // empty: none. Called on the loading thread, after the model.
  std::function<Engine()> draft_model;

  // Browser protection (docs/server.md, "Security"): Host names besides IP
  // literals and localhost, and origins whose pages may call the API.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;

  // Limits, all enforced while the request is read.
  size_t max_body_bytes = 1 << 20; // one request body, after chunked decoding; more gets 413
  // Bodies being read or waiting to be parsed, over all connections; a body
  // that would pass it gets 503. Raised to max_body_bytes when smaller.
  size_t max_bodies_in_flight_bytes = 16 << 20;
  size_t max_header_bytes = 32 * 1024;      // request line and headers; more gets 431
  int32_t max_header_count = 100;           // more gets 431
  int32_t max_connections = 512;            // open connections; more are refused with 503
  int32_t max_connections_per_client = 128; // from one address; more are refused with 429
  JsonLimits json;
  size_t max_prompt_bytes = 1 << 20; // prompt text (all messages) checked before tokenizing
  int32_t max_stop_strings = 16;
  size_t max_stop_string_bytes = 1024;
  std::chrono::seconds request_timeout{30}; // a whole request (head and body) must arrive in this
  std::chrono::seconds read_timeout{10};    // a client that sends nothing for this long is dropped
  std::chrono::seconds write_timeout{30};   // a client that reads nothing for this long is dropped
  std::chrono::seconds idle_timeout{5};     // keep-alive connections idle this long are closed
  // Threads that parse request bodies and tokenize prompts (the network I/O
  // has one thread of its own); 0: 2.
  int32_t http_threads = 0;
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

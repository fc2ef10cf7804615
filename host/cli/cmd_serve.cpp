// bonsai serve: the OpenAI-compatible HTTP server (docs/server.md). The
// listener is up at once; the model loads behind it (/health says 503 until
// it is ready). SIGINT or SIGTERM stops taking requests and lets the running
// ones finish for --shutdown-grace seconds; a second signal exits at once.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "bonsai/server.hpp"
#include "commands.hpp"
#include "engine_setup.hpp"
#include "model_file.hpp"
#include "options.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

struct ServeArgs {
  server::ServerOptions server;
  int64_t max_body_kib = 1024;
  int64_t read_timeout = 30;
  int64_t write_timeout = 30;
  int64_t idle_timeout = 5;
  int64_t shutdown_grace = 10;
};

// Blocks SIGINT and SIGTERM in every thread started after this, so that
// only the watcher below receives them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void check(const ServeArgs &a) {
  auto require = [](bool ok, const char *message) {
    if (!ok)
      throw UsageError(message);
  };
  require(a.server.port >= 0 && a.server.port <= 65535, "--port must be in 0..65535");
  require(a.server.parallel >= 1 && a.server.parallel <= 256, "--parallel must be in 1..256");
  require(a.server.max_queue >= 0, "--queue must be >= 0");
  require(a.server.prefill_chunk >= 1, "--prefill-chunk must be >= 1");
  require(a.max_body_kib >= 1 && a.max_body_kib <= 1024 * 1024,
          "--max-body must be in 1..1048576 KiB");
  require(a.read_timeout >= 1 && a.write_timeout >= 1 && a.idle_timeout >= 1,
          "--read-timeout, --write-timeout and --idle-timeout must be >= 1 second");
  require(a.shutdown_grace >= 0, "--shutdown-grace must be >= 0");
}

} // namespace

int serve_command(const Args &args) {
  EngineArgs engine_args;
  ServeArgs a;
  CommandLine command_line("serve", "serve -m FILE [--host ADDR] [--port N] [--parallel N] ...");
  command_line.engine(engine_args).logging();
  command_line.add_options()("host", po::value(&a.server.host)->value_name("ADDR"),
                             "address to listen on (default 127.0.0.1; 0.0.0.0 for every "
                             "interface)")("port", po::value(&a.server.port)->value_name("N"),
                                           "port (default 8080; 0 = any free one)")(
      "parallel", po::value(&a.server.parallel)->value_name("N"),
      "requests generated at once, each with its own KV cache of -c tokens (default 4)")(
      "queue", po::value(&a.server.max_queue)->value_name("N"),
      "requests that may wait for a free slot; more get 429 (default 64)")(
      "prefill-chunk", po::value(&a.server.prefill_chunk)->value_name("N"),
      "prompt tokens read per step while other replies stream (default 64)")(
      "api-key", po::value(&a.server.api_key)->value_name("KEY"),
      "require 'Authorization: Bearer KEY' on /v1 (default: $BONSAI_API_KEY, else none)")(
      "model-id", po::value(&a.server.model_id)->value_name("NAME"),
      "the model's name in the API (default: the file name without .gguf)")(
      "max-body", po::value(&a.max_body_kib)->value_name("KIB"),
      "largest request body in KiB (default 1024)")(
      "read-timeout", po::value(&a.read_timeout)->value_name("S"),
      "seconds a client may stay silent while sending a request (default 30)")(
      "write-timeout", po::value(&a.write_timeout)->value_name("S"),
      "seconds a client may stop reading a reply (default 30)")(
      "idle-timeout", po::value(&a.idle_timeout)->value_name("S"),
      "seconds an idle keep-alive connection stays open (default 5)")(
      "shutdown-grace", po::value(&a.shutdown_grace)->value_name("S"),
      "on SIGINT/SIGTERM, seconds running requests may take to finish before they are "
      "cancelled (default 10)");
  if (!command_line.parse(args))
    return kExitOk;
  check(a);
  if (a.server.api_key.empty())
    if (const char *key = std::getenv("BONSAI_API_KEY"); key != nullptr)
      a.server.api_key = key;
  a.server.max_body_bytes = static_cast<size_t>(a.max_body_kib) * 1024;
  a.server.read_timeout = std::chrono::seconds(a.read_timeout);
  a.server.write_timeout = std::chrono::seconds(a.write_timeout);
  a.server.idle_timeout = std::chrono::seconds(a.idle_timeout);
  engine_args.progress = false; // the model loads behind a running server
  check_model_path(engine_args.model);

  const sigset_t stop_signals = block_stop_signals();
  server::Server server(a.server, [engine_args] { return open_engine(engine_args); });
  std::fprintf(stderr, "bonsai serve: listening on http://%s:%d (model loading; GET /health)\n",
               a.server.host.c_str(), server.port());
  std::thread watcher([&server, &stop_signals, grace = a.shutdown_grace] {
    int signal = 0;
    if (sigwait(&stop_signals, &signal) != 0)
      return;
    std::fprintf(stderr,
                 "bonsai serve: stopping (finishing running requests for up to %llds; "
                 "again to exit at once)\n",
                 static_cast<long long>(grace));
    server.shutdown(std::chrono::seconds(grace));
    if (sigwait(&stop_signals, &signal) == 0)
      _exit(kExitInterrupted);
  });
  watcher.detach(); // it may wait for a second signal that never comes
  server.wait_loaded();
  if (!server.ready() && !server.load_error().empty()) {
    std::fprintf(stderr, "bonsai: error: %s\n", server.load_error().c_str());
    server.shutdown(std::chrono::milliseconds(0));
    server.wait();
    return kExitRuntimeError;
  }
  if (server.ready())
    std::fprintf(stderr, "bonsai serve: ready\n");
  server.wait();
  std::fprintf(stderr, "bonsai serve: stopped\n");
  return kExitOk;
}

} // namespace bonsai::cli

// bonsai serve: the OpenAI-compatible HTTP server (docs/server.md). The
// listener is up at once; the model loads behind it (/health says 503 until
// it is ready). SIGINT or SIGTERM stops taking requests and lets the running
// ones finish for --shutdown-grace seconds; a second signal exits at once.
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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
  std::vector<std::string> api_keys;
  std::string api_key_file;
  std::string cache_isolation = "key";
  std::string reasoning_format = "reasoning_content";
  int64_t reasoning_budget = -1;
  int64_t n_predict = -1;
  std::string alias; // --alias, llama-server's --model-id
  bool no_webui = false;
  int64_t max_body_kib = 1024;
  int64_t max_prompt_kib = 0; // 0: --max-body
  int64_t request_timeout = 30;
  int64_t read_timeout = 10;
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
  require(a.server.itl_budget == 0.0 ||
              (a.server.itl_budget >= 1.0 && std::isfinite(a.server.itl_budget)),
          "--itl-budget must be 0 (off) or a number >= 1");
  require(a.max_body_kib >= 1 && a.max_body_kib <= 1024 * 1024,
          "--max-body must be in 1..1048576 KiB");
  require(a.max_prompt_kib >= 0 && a.max_prompt_kib <= 1024 * 1024,
          "--max-prompt must be in 1..1048576 KiB");
  require(a.request_timeout >= 1 && a.read_timeout >= 1 && a.write_timeout >= 1 &&
              a.idle_timeout >= 1,
          "--request-timeout, --read-timeout, --write-timeout and --idle-timeout must be >= 1 "
          "second");
  require(a.server.max_connections >= 1 && a.server.max_connections_per_client >= 1,
          "--max-connections and --max-connections-per-client must be >= 1");
  require(a.shutdown_grace >= 0, "--shutdown-grace must be >= 0");
  require(a.server.http_threads >= 0 && a.server.http_threads <= 256,
          "--http-threads must be in 0..256 (0: the default, 2)");
  require(a.cache_isolation == "key" || a.cache_isolation == "request" ||
              a.cache_isolation == "off",
          "--cache-isolation must be key, request or off");
  require(a.reasoning_format == "reasoning_content" || a.reasoning_format == "deepseek" ||
              a.reasoning_format == "reasoning" || a.reasoning_format == "none",
          "--reasoning-format must be reasoning_content, reasoning or none");
  require(a.reasoning_budget >= -1 && a.reasoning_budget <= 1'000'000'000,
          "--reasoning-budget must be -1 (no limit) or 0..1000000000 tokens");
  require(a.n_predict >= -1 && a.n_predict <= 1'000'000'000 && a.n_predict != 0,
          "-n/--n-predict must be -1 (no limit) or 1..1000000000 tokens");
  for (const std::string &key : a.api_keys)
    require(!key.empty() && key.find_first_of(" \t\r\n") == std::string::npos,
            "an --api-key is empty or holds white space");
}

// One key per line; blank lines and lines starting with '#' are skipped.
std::vector<std::string> read_key_file(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw UsageError("--api-key-file: cannot read '" + path + "'");
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#')
      continue;
    const std::string key = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (key.find_first_of(" \t") != std::string::npos)
      throw UsageError("--api-key-file: a key in '" + path + "' holds white space");
    keys.push_back(key);
  }
  if (keys.empty())
    throw UsageError("--api-key-file: '" + path + "' holds no key");
  return keys;
}

server::CacheIsolation cache_isolation(const std::string &name) {
  if (name == "request")
    return server::CacheIsolation::request;
  if (name == "off")
    return server::CacheIsolation::off;
  return server::CacheIsolation::key;
}

// Every connection is a descriptor: let the server hold as many as it may
// accept, as far as the hard limit allows.
void raise_descriptor_limit(int32_t connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  const rlim_t wanted = static_cast<rlim_t>(connections) + 256;
  if (limit.rlim_cur >= wanted)
    return;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
}

} // namespace

int serve_command(const Args &args) {
  EngineArgs engine_args;
  ServeArgs a;
  CommandLine command_line("serve", "serve -m FILE [--host ADDR] [--port N] [--parallel N] ...");
  DraftArgs draft;
  command_line.engine(engine_args).draft(draft).logging();
  command_line.add_options()("host", po::value(&a.server.host)->value_name("ADDR"),
                             "address to listen on (default 127.0.0.1; 0.0.0.0 for every "
                             "interface)")("port", po::value(&a.server.port)->value_name("N"),
                                           "port (default 8080; 0 = any free one)")(
      "parallel", po::value(&a.server.parallel)->value_name("N"),
      "requests generated at once, each with its own KV cache of -c tokens (default 4)")(
      "queue", po::value(&a.server.max_queue)->value_name("N"),
      "requests that may wait for a free slot; more get 429 (default 64)")(
      "prefill-chunk", po::value(&a.server.prefill_chunk)->value_name("N"),
      "most prompt tokens read per step while other replies stream (default 64)")(
      "itl-budget", po::value(&a.server.itl_budget)->value_name("X"),
      "a step that reads prompt tokens while replies stream takes at most X times a "
      "decode-only step, by measured costs (default 1.75; 0 = always --prefill-chunk)")(
      "api-key", po::value(&a.api_keys)->value_name("KEY")->composing(),
      "require 'Authorization: Bearer KEY' (or 'x-api-key: KEY') on /v1 and /api; repeat for "
      "several keys (default: $BONSAI_API_KEY, else none)")(
      "api-key-file", po::value(&a.api_key_file)->value_name("FILE"),
      "read API keys from FILE, one per line")(
      "reasoning-format", po::value(&a.reasoning_format)->value_name("FORMAT"),
      "where a chat reply's <think> block goes: reasoning_content (default), reasoning, or "
      "none (left in the content); a request may ask with \"reasoning_format\"")(
      "n-predict,n", po::value(&a.n_predict)->value_name("N"),
      "most tokens any reply may take, whatever a request asks (-1: no limit but the "
      "context; default -1)")(
      "reasoning-budget", po::value(&a.reasoning_budget)->value_name("N"),
      "most tokens of a chat reply's <think> block before </think> is forced (default -1: no "
      "limit); a request may set \"reasoning_budget\"")(
      "cache-isolation", po::value(&a.cache_isolation)->value_name("MODE"),
      "whose requests share prompt-cache prefixes: key (same API key; all without keys), "
      "request (none), off (all) (default key)")(
      "allowed-host", po::value(&a.server.allowed_hosts)->value_name("NAME")->composing(),
      "a Host name to answer besides IP addresses and localhost (.example.com for a domain, * "
      "for any); repeatable")("no-webui", po::bool_switch(&a.no_webui),
                              "serve no chat page at / (the API only)")(
      "vllm-metrics", po::bool_switch(&a.server.vllm_metrics),
      "/metrics also writes the load under vLLM's names (vllm:num_requests_waiting, "
      "vllm:num_requests_running, vllm:kv_cache_usage_perc, vllm:cache_config_info)")(
      "cors-origin", po::value(&a.server.cors_origins)->value_name("ORIGIN")->composing(),
      "an origin (http://host:port) whose web pages may call the API, * for any; repeatable")(
      "model-id", po::value(&a.server.model_id)->value_name("NAME"),
      "the model's name in /v1/models and in replies; requests may name it anything "
      "(default: the file name without .gguf)")("alias", po::value(&a.alias)->value_name("NAME"),
                                                "llama-server's name for --model-id")(
      "max-body", po::value(&a.max_body_kib)->value_name("KIB"),
      "largest request body in KiB (default 1024)")(
      "max-prompt", po::value(&a.max_prompt_kib)->value_name("KIB"),
      "largest prompt text in KiB, checked before it is tokenized (default: --max-body)")(
      "max-connections", po::value(&a.server.max_connections)->value_name("N"),
      "open connections at most; more are refused with 503 (default 512)")(
      "max-connections-per-client",
      po::value(&a.server.max_connections_per_client)->value_name("N"),
      "open connections from one address at most; more are refused with 429 (default 128)")(
      "http-threads", po::value(&a.server.http_threads)->value_name("N"),
      "threads that parse request bodies and tokenize prompts (default 2)")(
      "request-timeout", po::value(&a.request_timeout)->value_name("S"),
      "seconds a client has to send a whole request (default 30)")(
      "read-timeout", po::value(&a.read_timeout)->value_name("S"),
      "seconds a client may stay silent while sending a request (default 10)")(
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
  if (!a.alias.empty()) {
    if (!a.server.model_id.empty() && a.server.model_id != a.alias)
      throw UsageError("--alias and --model-id name the model twice; give one");
    a.server.model_id = a.alias;
  }
  a.server.api_keys = a.api_keys;
  a.server.web_ui = !a.no_webui;
  if (!a.api_key_file.empty()) {
    const std::vector<std::string> keys = read_key_file(a.api_key_file);
    a.server.api_keys.insert(a.server.api_keys.end(), keys.begin(), keys.end());
  }
  if (a.server.api_keys.empty())
    if (const char *key = std::getenv("BONSAI_API_KEY"); key != nullptr && *key != '\0')
      a.server.api_keys.push_back(key);
  a.server.cache_isolation = cache_isolation(a.cache_isolation);
  a.server.reasoning_budget = static_cast<int32_t>(a.reasoning_budget);
  a.server.n_predict = static_cast<int32_t>(a.n_predict);
  a.server.reasoning_format = a.reasoning_format == "none" ? server::ReasoningFormat::none
                              : a.reasoning_format == "reasoning"
                                  ? server::ReasoningFormat::reasoning
                                  : server::ReasoningFormat::reasoning_content;
  a.server.max_body_bytes = static_cast<size_t>(a.max_body_kib) * 1024;
  // One string of the body may be as long as the body allows.
  a.server.json.max_string_bytes = a.server.max_body_bytes;
  a.server.max_prompt_bytes =
      a.max_prompt_kib > 0 ? static_cast<size_t>(a.max_prompt_kib) * 1024 : a.server.max_body_bytes;
  a.server.request_timeout = std::chrono::seconds(a.request_timeout);
  a.server.read_timeout = std::chrono::seconds(a.read_timeout);
  a.server.write_timeout = std::chrono::seconds(a.write_timeout);
  a.server.idle_timeout = std::chrono::seconds(a.idle_timeout);
  engine_args.progress = false; // the model loads behind a running server
  check_model_path(engine_args.model);
  a.server.draft = draft.options;
  if (!draft.model_draft.empty()) {
    check_model_path(draft.model_draft);
    const EngineArgs draft_args = draft_engine_args(draft, engine_args);
    a.server.draft_model = [draft_args] { return open_engine(draft_args); };
  }

  raise_descriptor_limit(a.server.max_connections);
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
  if (server.ready()) {
    if (a.server.web_ui)
      std::fprintf(stderr, "bonsai serve: ready (chat page: http://%s:%d/)\n",
                   a.server.host == "0.0.0.0" ? "127.0.0.1" : a.server.host.c_str(), server.port());
    else
      std::fprintf(stderr, "bonsai serve: ready\n");
  }
  server.wait();
  std::fprintf(stderr, "bonsai serve: stopped\n");
  return kExitOk;
}

} // namespace bonsai::cli

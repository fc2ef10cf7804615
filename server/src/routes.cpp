// Every endpoint but the completions, and the checks every request passes
// before its body is read: Host (DNS rebinding), Origin (cross-site
// requests, CORS), the API key, and the body's media type.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "api/anthropic/anthropic_api.hpp"
#include "api/llama/utility_endpoints.hpp"
#include "api/ollama/ollama_api.hpp"
#include "api/ollama/ollama_models.hpp"
#include "api/openai/chat_completion_writer.hpp"
#include "api/openai/openai_response.hpp"
#include "api/responses/responses_api.hpp"
#include "base/server_log.hpp"
#include "http/error_response.hpp"
#include "server_impl.hpp"
#include "web_assets.hpp"

namespace bonsai::server {
namespace {

struct Route {
  const char *path;
  http::verb method;
  const char *allow; // the Allow header of a 405
};

const Route kRoutes[] = {
    {"/", http::verb::get, "GET, OPTIONS"}, // the chat page and its files
    {"/chat.js", http::verb::get, "GET, OPTIONS"},
    {"/chat.css", http::verb::get, "GET, OPTIONS"},
    {"/health", http::verb::get, "GET, OPTIONS"},
    {"/metrics", http::verb::get, "GET, OPTIONS"},
    {"/v1/models", http::verb::get, "GET, OPTIONS"},
    {"/props", http::verb::get, "GET, OPTIONS"},
    {"/tokenize", http::verb::post, "POST, OPTIONS"},
    {"/detokenize", http::verb::post, "POST, OPTIONS"},
    {"/apply-template", http::verb::post, "POST, OPTIONS"},
    {"/v1/chat/completions", http::verb::post, "POST, OPTIONS"},
    {"/v1/completions", http::verb::post, "POST, OPTIONS"},
    // OpenAI's Responses API and Anthropic's Messages API.
    {"/v1/responses", http::verb::post, "POST, OPTIONS"},
    {"/v1/messages", http::verb::post, "POST, OPTIONS"},
    {"/v1/messages/count_tokens", http::verb::post, "POST, OPTIONS"},
    // Ollama's API.
    {"/api/chat", http::verb::post, "POST, OPTIONS"},
    {"/api/generate", http::verb::post, "POST, OPTIONS"},
    {"/api/tags", http::verb::get, "GET, OPTIONS"},
    {"/api/show", http::verb::post, "POST, OPTIONS"},
    {"/api/ps", http::verb::get, "GET, OPTIONS"},
    {"/api/version", http::verb::get, "GET, OPTIONS"},
};

// The endpoints that generate, and the API shape each is read in.
struct GenerationRoute {
  const char *path;
  RequestParser parse;
};

const GenerationRoute kGenerationRoutes[] = {
    {"/v1/chat/completions", parse_chat_completion},
    {"/v1/completions", parse_text_completion},
    {"/v1/responses", parse_responses_request},
    {"/v1/messages", parse_messages_request},
    {"/api/chat", parse_ollama_chat},
    {"/api/generate", parse_ollama_generate},
};

const Route *route_of(const std::string &path) {
  for (const Route &route : kRoutes)
    if (path == route.path)
      return &route;
  return nullptr;
}

// Everything but the probes (/health, /metrics) and the chat page's files:
// the APIs (OpenAI's and Anthropic's under /v1, Ollama's under /api), and
// the endpoints that show the model or run its tokenizer.
bool needs_key(const std::string &path) {
  return path.starts_with("/v1/") || path.starts_with("/api/") || path == "/props" ||
         path == "/tokenize" || path == "/detokenize" || path == "/apply-template";
}

ApiError forbidden(const std::string &message) {
  return ApiError(403, "permission_error", message);
}

// The key a request was made with: its index in options.api_keys, -1 when
// the server has none, nullopt when the request does not carry a valid one.
// The key may come as "Authorization: Bearer KEY" (OpenAI's clients, and
// Anthropic's with an auth token) or as "x-api-key: KEY" (Anthropic's).
std::optional<int> request_key(const ServerOptions &options, const HttpMessage &message) {
  if (options.api_keys.empty())
    return -1;
  if (const auto header = message.find(http::field::authorization); header != message.end())
    if (const std::optional<std::string_view> token = bearer_token(header->value()))
      if (const int key = match_api_key(options.api_keys, *token); key >= 0)
        return key;
  if (const auto header = message.find("x-api-key"); header != message.end())
    if (const int key = match_api_key(options.api_keys, header->value()); key >= 0)
      return key;
  return std::nullopt;
}

std::string_view header_of(const HttpMessage &message, http::field name) {
  const auto it = message.find(name);
  return it == message.end() ? std::string_view() : std::string_view(it->value());
}

std::optional<ApiError>
host_and_origin_refusal(const Server::Impl &impl, const HttpMessage &message,
                        std::vector<std::pair<std::string, std::string>> &cors) {
  const auto host = message.find(http::field::host);
  if (host == message.end()) {
    if (message.version() >= 11)
      return bad_request("The request has no Host header");
  } else if (!impl.origin_policy.host_allowed(host->value())) {
    return forbidden(fmt::format("This server does not answer to the host '{}'; start it with "
                                 "--allowed-host to add the name",
                                 std::string_view(host->value())));
  }
  const std::string_view origin = header_of(message, http::field::origin);
  switch (impl.origin_policy.judge_origin(origin, header_of(message, http::field::host))) {
  case OriginPolicy::OriginVerdict::none:
  case OriginPolicy::OriginVerdict::same_origin:
    return std::nullopt;
  case OriginPolicy::OriginVerdict::allowed:
    cors.emplace_back("Access-Control-Allow-Origin", std::string(origin));
    cors.emplace_back("Vary", "Origin");
    // A page may read what the compatibility policy noted (field_notes.hpp).
    cors.emplace_back("Access-Control-Expose-Headers", "Bonsai-Ignored-Fields, Bonsai-Warning");
    return std::nullopt;
  case OriginPolicy::OriginVerdict::refused:
    break;
  }
  return forbidden(fmt::format("Requests from pages of '{}' are refused; start the server with "
                               "--cors-origin to allow that origin",
                               origin));
}

// A CORS preflight from an origin the policy let in (screen() refused the
// others), or a plain OPTIONS.
HttpResponse options_answer(const Route *route, const HttpMessage &message) {
  HttpResponse answer(204, "", "");
  answer.header("Allow", route != nullptr ? route->allow : "GET, POST, OPTIONS");
  if (message.find(http::field::origin) == message.end())
    return answer;
  answer.header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  // A trusted origin may send the headers its client library adds.
  const std::string_view asked = header_of(message, http::field::access_control_request_headers);
  answer.header("Access-Control-Allow-Headers",
                asked.empty() ? "Authorization, Content-Type, X-Api-Key" : std::string(asked));
  answer.header("Access-Control-Max-Age", "600");
  return answer;
}

// The chat page's files. The page runs only its own script and style and
// talks only to this server; no other site may frame it.
std::optional<HttpResponse> web_page(const std::string &path) {
  const std::string file = path == "/" ? "/index.html" : path;
  for (const WebAsset &asset : web_assets()) {
    if (asset.path != file)
      continue;
    const std::string_view type = file.ends_with(".html") ? "text/html; charset=utf-8"
                                  : file.ends_with(".js") ? "text/javascript; charset=utf-8"
                                                          : "text/css; charset=utf-8";
    HttpResponse answer(200, std::string(asset.bytes), std::string(type));
    answer.header("Content-Security-Policy",
                  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                  "img-src 'self' data:; base-uri 'none'; form-action 'self'; "
                  "frame-ancestors 'none'");
    answer.header("Referrer-Policy", "no-referrer");
    answer.header("Cache-Control", "no-cache");
    return answer;
  }
  return std::nullopt;
}

HttpResponse health(const Server::Impl &impl) {
  switch (impl.state.load()) {
  case ServerState::ready:
    return HttpResponse(200, R"({"status":"ok"})");
  case ServerState::loading:
    return HttpResponse(503, R"({"status":"loading model"})");
  case ServerState::stopping:
    return HttpResponse(503, R"({"status":"shutting down"})");
  case ServerState::failed:
    break;
  }
  std::lock_guard lock(impl.mutex);
  return error_response(500, "server_error", "The model could not be loaded: " + impl.load_error);
}

HttpResponse models(const Server::Impl &impl) {
  const Scheduler *scheduler = impl.ready_scheduler();
  if (scheduler == nullptr)
    return error_response(503, "server_error", "The model is not loaded yet");
  std::lock_guard lock(impl.mutex);
  const ModelInfo &info = impl.engine->model();
  return HttpResponse(
      200, models_body({impl.model_id, impl.started_unix, scheduler->n_ctx(), info.n_ctx_train,
                        info.n_vocab, info.n_params, info.weight_bytes}));
}

HttpResponse props(const Server::Impl &impl) {
  const Scheduler *scheduler = impl.ready_scheduler();
  if (scheduler == nullptr)
    return error_response(503, "server_error", "The model is not loaded yet");
  std::lock_guard lock(impl.mutex);
  return HttpResponse(200,
                      props_body(*impl.engine, {impl.model_id, impl.engine->model().path.string(),
                                                scheduler->n_ctx(), impl.options.parallel}));
}

// What Ollama's model endpoints show of the one model (ready servers only).
OllamaModel ollama_model(const Server::Impl &impl) {
  std::lock_guard lock(impl.mutex);
  return ollama_model_of(*impl.engine, impl.model_id, impl.scheduler->n_ctx());
}

// GET /api/tags, /api/ps and /api/version (I/O thread: no body, no work).
HttpResponse ollama_listing(const Server::Impl &impl, const std::string &path) {
  if (path == "/api/version")
    return HttpResponse(200, ollama_version_body());
  if (auto refusal = not_serving(impl, path))
    return *refusal;
  return HttpResponse(200, path == "/api/tags" ? ollama_tags_body(ollama_model(impl))
                                               : ollama_ps_body(ollama_model(impl)));
}

// A body-taking endpoint that runs no generation (/tokenize, ...),
// answered on a worker.
using BodyAnswer = std::function<std::string(std::string_view body)>;
void answer_on_worker(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange,
                      BodyAnswer answer) {
  if (auto refusal = not_serving(impl, exchange->request().path))
    return exchange->respond(std::move(*refusal));
  run_on_worker(impl, exchange, [exchange, answer = std::move(answer)] {
    FieldNotes notes;
    std::string body = read_with_notes(notes, exchange->request().path,
                                       [&] { return answer(exchange->request().message.body()); });
    HttpResponse response = with_notes(HttpResponse(200, std::move(body)), notes.headers());
    return std::function<void()>(
        [exchange, response]() mutable { exchange->respond(std::move(response)); });
  });
}

// An endpoint of utility_endpoints.hpp and the like: ready once means ready
// for good, so the engine lives past every handler.
using EngineAnswer = std::string (*)(const Engine &, const RequestContext &, std::string_view);
void answer_with_engine(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange,
                        EngineAnswer answer) {
  answer_on_worker(impl, exchange, [&impl, answer](std::string_view body) {
    return answer(*impl.engine, impl.request_context, body);
  });
}

// The label requests are counted under: known endpoints by path, the rest as
// "other" (so that scanning random paths cannot grow the metrics).
std::string endpoint_label(const std::string &path) {
  return route_of(path) != nullptr ? path : "other";
}

} // namespace

Screening Server::Impl::screen(const RequestHead &head) {
  Screening screening;
  const auto refuse = [&](const ApiError &error) {
    screening.refusal = error_response(error, head.path);
    if (error.status == 401)
      screening.refusal->header("WWW-Authenticate", "Bearer");
    return screening;
  };
  if (auto refusal = host_and_origin_refusal(*this, head.message, screening.response_headers))
    return refuse(*refusal);
  // A preflight carries no key: browsers never send one with it.
  if (head.message.method() == http::verb::options)
    return screening;
  if (needs_key(head.path) && !request_key(options, head.message))
    return refuse(ApiError(401, "authentication_error",
                           "Missing or wrong API key: send 'Authorization: Bearer KEY' "
                           "(or 'x-api-key: KEY')",
                           {}, "invalid_api_key"));
  const Route *route = route_of(head.path);
  if (route != nullptr && route->method == http::verb::post &&
      head.message.method() == http::verb::post &&
      !is_json_media_type(header_of(head.message, http::field::content_type)))
    return refuse(ApiError(415, "invalid_request_error",
                           "The request body must be JSON: send 'Content-Type: application/json'"));
  return screening;
}

void Server::Impl::serve(const std::shared_ptr<Exchange> &exchange) {
  const HttpMessage &message = exchange->request().message;
  const std::string &path = exchange->request().path;
  const bool page = path == "/" || path == "/chat.js" || path == "/chat.css";
  const Route *route = page && !options.web_ui ? nullptr : route_of(path);
  if (message.method() == http::verb::options)
    return exchange->respond(options_answer(route, message));
  if (route == nullptr)
    return exchange->respond(error_response(
        404, "invalid_request_error",
        fmt::format("No endpoint {} {}", std::string_view(message.method_string()), path), path));
  if (message.method() != route->method)
    return exchange->respond(error_response(405, "invalid_request_error",
                                            fmt::format("{} is not allowed on {}; use {}",
                                                        std::string_view(message.method_string()),
                                                        path, http::to_string(route->method)),
                                            path)
                                 .header("Allow", route->allow));
  if (page)
    return exchange->respond(*web_page(path));
  if (path == "/health")
    return exchange->respond(health(*this));
  if (path == "/metrics")
    return exchange->respond(metrics_answer(*this));
  if (path == "/v1/models")
    return exchange->respond(models(*this));
  if (path == "/props")
    return exchange->respond(props(*this));
  if (path == "/tokenize")
    return answer_with_engine(*this, exchange, tokenize_body);
  if (path == "/detokenize")
    return answer_with_engine(*this, exchange, detokenize_body);
  if (path == "/apply-template")
    return answer_with_engine(*this, exchange, apply_template_body);
  if (path == "/v1/messages/count_tokens")
    return answer_with_engine(*this, exchange, count_tokens_body);
  if (path == "/api/tags" || path == "/api/ps" || path == "/api/version")
    return exchange->respond(ollama_listing(*this, path));
  if (path == "/api/show") {
    if (auto refusal = not_serving(*this, path))
      return exchange->respond(std::move(*refusal));
    return answer_on_worker(*this, exchange,
                            [this, model = ollama_model(*this)](std::string_view body) {
                              return ollama_show_body(model, request_context, body);
                            });
  }
  const int key = request_key(options, message).value_or(-1);
  for (const GenerationRoute &generation : kGenerationRoutes)
    if (path == generation.path)
      return start_generation(*this, exchange, generation.parse, tenant_of(key));
}

void Server::Impl::answered(const std::string &path, int status) {
  metrics.request_finished(endpoint_label(path), status);
}

uint64_t Server::Impl::tenant_of(int key) {
  switch (options.cache_isolation) {
  case CacheIsolation::off:
    return 0;
  case CacheIsolation::request:
    return next_private_tenant.fetch_add(1);
  case CacheIsolation::key:
    break;
  }
  return static_cast<uint64_t>(key + 1);
}

} // namespace bonsai::server

// Every endpoint but the completions, and the server-wide handlers: API key,
// header limits, errors in OpenAI's shape, request counting.
#include <fmt/format.h>

#include "openai_response.hpp"
#include "server_impl.hpp"
#include "server_log.hpp"

namespace bonsai::server {
namespace {

// Request headers: more, or more bytes in all, get 431.
constexpr size_t kMaxHeaderCount = 100;
constexpr size_t kMaxHeaderBytes = 32 * 1024;

const char *kJson = "application/json";

// The label requests are counted under: known endpoints by path, the rest as
// "other" (so that scanning random paths cannot grow the metrics).
std::string endpoint_label(const std::string &path) {
  for (const char *known :
       {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"})
    if (path == known)
      return path;
  return "other";
}

bool authorized(const std::string &api_key, const httplib::Request &request) {
  const std::string header = request.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (header.size() != prefix.size() + api_key.size() || header.compare(0, prefix.size(), prefix))
    return false;
  // Constant time in the key's length, so timing does not reveal a prefix.
  unsigned char diff = 0;
  for (size_t i = 0; i < api_key.size(); ++i)
    diff |= static_cast<unsigned char>(header[prefix.size() + i] ^ api_key[i]);
  return diff == 0;
}

httplib::Server::HandlerResponse
pre_route(const Server::Impl &impl, const httplib::Request &request, httplib::Response &response) {
  size_t header_bytes = 0;
  for (const auto &[name, value] : request.headers)
    header_bytes += name.size() + value.size() + 4;
  if (request.headers.size() > kMaxHeaderCount || header_bytes > kMaxHeaderBytes) {
    send_error(response, ApiError(431, "invalid_request_error",
                                  fmt::format("The request headers are too large (at most {} "
                                              "headers, {} bytes)",
                                              kMaxHeaderCount, kMaxHeaderBytes)));
    return httplib::Server::HandlerResponse::Handled;
  }
  if (!impl.options.api_key.empty() && request.path.rfind("/v1/", 0) == 0 &&
      !authorized(impl.options.api_key, request)) {
    response.set_header("WWW-Authenticate", "Bearer");
    send_error(response, ApiError(401, "authentication_error",
                                  "Missing or wrong API key: send 'Authorization: Bearer KEY'", {},
                                  "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

void health(const Server::Impl &impl, httplib::Response &response) {
  switch (impl.state.load()) {
  case ServerState::ready:
    response.set_content(R"({"status":"ok"})", kJson);
    return;
  case ServerState::loading:
    response.status = 503;
    response.set_content(R"({"status":"loading model"})", kJson);
    return;
  case ServerState::stopping:
    response.status = 503;
    response.set_content(R"({"status":"shutting down"})", kJson);
    return;
  case ServerState::failed: {
    std::lock_guard lock(impl.mutex);
    response.status = 500;
    send_error(response,
               ApiError(500, "server_error", "The model could not be loaded: " + impl.load_error));
    return;
  }
  }
}

// Status lines cpp-httplib answers on its own (404, 405, 413, 400 for a
// request it cannot parse) get a JSON body too; bodies set by our handlers
// are kept.
void error_page(const httplib::Request &request, httplib::Response &response) {
  if (!response.body.empty())
    return;
  std::string message;
  switch (response.status) {
  case 404:
    message = fmt::format("No endpoint {} {}", request.method, request.path);
    break;
  case 405:
    message = fmt::format("{} is not allowed on {}", request.method, request.path);
    break;
  case 413:
    message = "The request body is too large";
    break;
  case 414:
    message = "The request URI is too long";
    break;
  default:
    message = fmt::format("The request could not be served (HTTP {})", response.status);
  }
  response.set_content(
      error_body(ApiError(response.status,
                          response.status >= 500 ? "server_error" : "invalid_request_error",
                          message)),
      kJson);
}

} // namespace

void send_error(httplib::Response &response, const ApiError &error) {
  response.status = error.status;
  response.set_content(error_body(error), kJson);
}

void install_routes(Server::Impl &impl) {
  httplib::Server &http = impl.http;
  http.set_pre_routing_handler(
      [&impl](const httplib::Request &request, httplib::Response &response) {
        return pre_route(impl, request, response);
      });
  http.Get("/health", [&impl](const httplib::Request &, httplib::Response &response) {
    health(impl, response);
  });
  http.Get("/metrics", [&impl](const httplib::Request &, httplib::Response &response) {
    response.set_content(impl.metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/v1/models", [&impl](const httplib::Request &, httplib::Response &response) {
    if (impl.ready_scheduler() == nullptr)
      return send_error(response, ApiError(503, "server_error", "The model is not loaded yet"));
    std::lock_guard lock(impl.mutex);
    response.set_content(models_body(impl.model_id, impl.started_unix), kJson);
  });
  http.Post("/v1/chat/completions",
            [&impl](const httplib::Request &request, httplib::Response &response) {
              handle_completion(impl, Endpoint::chat, request, response);
            });
  http.Post("/v1/completions",
            [&impl](const httplib::Request &request, httplib::Response &response) {
              handle_completion(impl, Endpoint::completion, request, response);
            });
  http.set_error_handler(error_page);
  http.set_exception_handler(
      [](const httplib::Request &, httplib::Response &response, std::exception_ptr error) {
        std::string message = "unknown error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception &e) {
          message = e.what();
        } catch (...) {
        }
        log_at(LogLevel::error, "a request failed: {}", message);
        send_error(response, ApiError(500, "server_error", "Internal error: " + message));
      });
  http.set_logger([&impl](const httplib::Request &request, const httplib::Response &response) {
    impl.metrics.request_finished(endpoint_label(request.path), response.status);
    log_at(LogLevel::debug, "{} {} -> {}", request.method, request.path, response.status);
  });
}

} // namespace bonsai::server

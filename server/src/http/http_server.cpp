#include "http/http_server.hpp"

#include <future>
#include <vector>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "base/server_log.hpp"
#include "bonsai/server.hpp"
#include "http/error_response.hpp"

namespace bonsai::server {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// After running out of descriptors or memory, accepting again at once would
// spin; the connections that end meanwhile make room.
constexpr std::chrono::milliseconds kAcceptBackoff{100};
// Connections taken from the accept queue at once, beside the one whose
// arrival woke the I/O thread.
constexpr int kAcceptBurst = 64;

// Every body's first bytes are free (see BodyBudget); the budget takes the
// rest of at least one body of the largest size.
constexpr size_t kFreeBodyBytes = 64 * 1024;

std::shared_ptr<BodyBudget> make_body_budget(const HttpServerOptions &options) {
  const size_t largest = options.limits.max_body_bytes > kFreeBodyBytes
                             ? options.limits.max_body_bytes - kFreeBodyBytes
                             : 0;
  return std::make_shared<BodyBudget>(std::max(options.max_bodies_in_flight_bytes, largest),
                                      kFreeBodyBytes);
}

std::string address_text(const asio::ip::address &address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_string();
  return address.to_string();
}

bool out_of_resources(const error_code &error) {
  return error == asio::error::no_descriptors || error == asio::error::no_buffer_space ||
         error == asio::error::no_memory || error.value() == ENFILE;
}

} // namespace

HttpServer::HttpServer(const HttpServerOptions &options, HttpApplication &application)
    : acceptor_(io_), accept_retry_(io_),
      counter_(options.max_connections, options.max_connections_per_client),
      context_{options.limits, application, counter_, make_body_budget(options),
               [this](HttpConnection *connection) { connections_.erase(connection); }} {
  const auto cannot_listen = [&](const std::string &why) {
    return ServerError(fmt::format("cannot listen on {}:{}: {}", options.host, options.port, why));
  };
  error_code error;
  tcp::resolver resolver(io_);
  const auto endpoints =
      resolver.resolve(options.host, std::to_string(options.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, error);
  if (error)
    throw cannot_listen(error.message());
  for (const auto &entry : endpoints) {
    acceptor_.close(error);
    acceptor_.open(entry.endpoint().protocol(), error);
    if (error)
      continue;
    // SO_REUSEADDR alone: a restart may bind while old connections linger,
    // but a second server cannot share the port of a running one.
    acceptor_.set_option(tcp::acceptor::reuse_address(true), error);
    acceptor_.bind(entry.endpoint(), error);
    if (!error)
      acceptor_.listen(asio::socket_base::max_listen_connections, error);
    if (!error)
      acceptor_.non_blocking(true, error); // for the bursts of on_accept
    if (!error)
      break;
  }
  if (error || !acceptor_.is_open())
    throw cannot_listen(error ? error.message() : "the address resolves to nothing");
  port_ = acceptor_.local_endpoint().port();
}

HttpServer::~HttpServer() {
  stop(std::chrono::milliseconds(0));
}

void HttpServer::start() {
  accept();
  thread_ = std::thread([this] {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception &error) {
        // A handler's failure must not end the thread every client needs.
        log_at(LogLevel::error, "the HTTP I/O thread caught: {}", error.what());
      }
    }
  });
}

template <class Work> auto HttpServer::on_io_thread(Work work) {
  std::packaged_task<std::invoke_result_t<Work>()> task(std::move(work));
  auto result = task.get_future();
  asio::post(io_, [&task] { task(); });
  return result.get();
}

void HttpServer::stop(std::chrono::milliseconds flush) {
  if (stopped_)
    return;
  stopped_ = true;
  if (!thread_.joinable()) {
    error_code ignored;
    acceptor_.close(ignored);
    return;
  }
  const auto connections = [this] {
    std::vector<std::shared_ptr<HttpConnection>> open;
    for (const auto &[raw, weak] : connections_)
      if (auto connection = weak.lock())
        open.push_back(std::move(connection));
    return open;
  };
  on_io_thread([&] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
    for (const auto &connection : connections())
      connection->close_if_idle();
  });
  const auto deadline = std::chrono::steady_clock::now() + flush;
  while (std::chrono::steady_clock::now() < deadline && on_io_thread([&] {
           const auto open = connections();
           return std::any_of(open.begin(), open.end(),
                              [](const auto &connection) { return connection->answering(); });
         }))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  on_io_thread([&] {
    for (const auto &connection : connections())
      connection->close();
  });
  keep_running_.reset();
  io_.stop();
  thread_.join();
}

void HttpServer::accept() {
  acceptor_.async_accept(
      [this](error_code error, tcp::socket socket) { on_accept(error, std::move(socket)); });
}

void HttpServer::on_accept(error_code error, tcp::socket socket) {
  if (!acceptor_.is_open() || error == asio::error::operation_aborted)
    return;
  if (error) {
    if (!out_of_resources(error)) {
      accept();
      return;
    }
    log_at(LogLevel::warn, "accepting a connection failed ({}); retrying in {} ms", error.message(),
           kAcceptBackoff.count());
    accept_retry_.expires_after(kAcceptBackoff);
    accept_retry_.async_wait([this](error_code waited) {
      if (!waited && acceptor_.is_open())
        accept();
    });
    return;
  }
  take(std::move(socket));
  // Under a flood the I/O thread wakes for many sockets; taking every
  // waiting connection now keeps a new client (a /health probe) from
  // waiting in the accept queue behind one wake-up per connection.
  for (int more = 0; more < kAcceptBurst; ++more) {
    tcp::socket next(io_);
    acceptor_.accept(next, error);
    if (error)
      break; // would_block: the queue is empty (other errors: the next async accept sees them)
    take(std::move(next));
  }
  accept();
}

void HttpServer::take(tcp::socket socket) {
  error_code error;
  const tcp::endpoint remote = socket.remote_endpoint(error);
  if (error)
    return;
  const std::string address = address_text(remote.address());
  const ConnectionCounter::Admission admission = counter_.admit(address);
  if (admission != ConnectionCounter::Admission::admitted) {
    refuse_at_door(socket, admission);
    return;
  }
  socket.set_option(tcp::no_delay(true), error); // streamed tokens go out at once
  auto connection = std::make_shared<HttpConnection>(std::move(socket), address, context_);
  connections_.emplace(connection.get(), connection);
  connection->start();
}

void HttpServer::refuse_at_door(tcp::socket &socket, ConnectionCounter::Admission why) {
  const bool server_full = why == ConnectionCounter::Admission::server_full;
  const HttpResponse answer =
      server_full
          ? error_response(503, "server_error", "The server has as many connections as it takes")
          : error_response(429, "rate_limit_error",
                           "This address has as many connections open as the server allows");
  // One non-blocking write: a refused client gets no more of this thread.
  const std::string bytes =
      fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
                  "Retry-After: 1\r\nConnection: close\r\n\r\n{}",
                  answer.status, server_full ? "Service Unavailable" : "Too Many Requests",
                  answer.body.size(), answer.body);
  error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(bytes), ignored);
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

} // namespace bonsai::server

#pragma once
// The listening side of `bonsai serve`: one I/O thread runs every connection
// (reading, writing and timers cost no thread per client, so slow clients
// cannot exhaust threads), connections past the limits are refused at the
// door, and shutdown closes what is idle at once and the rest after a
// bounded flush.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "http/connection_limits.hpp"
#include "http/http_connection.hpp"

namespace bonsai::server {

struct HttpServerOptions {
  std::string host;
  int port = 0; // 0: any free port
  HttpLimits limits;
  int32_t max_connections = 512;
  int32_t max_connections_per_client = 128;
  size_t max_bodies_in_flight_bytes = 16 << 20;
};

class HttpServer {
public:
  // Binds and listens; throws ServerError when it cannot. Serving starts
  // with start(). `application` must outlive the server.
  HttpServer(const HttpServerOptions &options, HttpApplication &application);
  ~HttpServer(); // stop(0)
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  int port() const { return port_; }
  void start();
  // Stops listening and closes idle connections at once; answers being
  // written get up to `flush` to finish; then every connection is closed and
  // the I/O thread ends. Blocks until then; safe to call more than once.
  void stop(std::chrono::milliseconds flush);

private:
  void accept();
  void on_accept(boost::system::error_code error, boost::asio::ip::tcp::socket socket);
  // Admits a new connection within the limits, or refuses it.
  void take(boost::asio::ip::tcp::socket socket);
  void refuse_at_door(boost::asio::ip::tcp::socket &socket, ConnectionCounter::Admission why);
  // Runs `work` on the I/O thread and waits for it.
  template <class Work> auto on_io_thread(Work work);

  boost::asio::io_context io_;
  // Keeps the I/O thread running while the listener and every connection
  // are closed, until stop() has finished with it.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> keep_running_{
      io_.get_executor()};
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  ConnectionCounter counter_;
  ConnectionContext context_;
  // Every open connection, by address (I/O thread only).
  std::unordered_map<HttpConnection *, std::weak_ptr<HttpConnection>> connections_;
  int port_ = 0;
  std::thread thread_;
  bool stopped_ = false;
};

} // namespace bonsai::server

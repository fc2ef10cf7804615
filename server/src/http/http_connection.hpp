#pragma once
// One client connection: reads requests (RequestReader enforces the limits
// on their bytes; the connection adds a deadline for the whole request and
// one for each read), hands them to the application, and writes its
// answers, whole or streamed. Everything here runs on the server's one I/O
// thread; other threads come back to it through Exchange::post.
//
// An answer given before the request's body was read ends the connection
// (after a lingering close, so that the client sees the answer): the unread
// body can never be taken for the next request.
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/beast_http.hpp"
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "http/connection_limits.hpp"
#include "http/http_message.hpp"
#include "http/request_reader.hpp"

namespace bonsai::server {

using HttpClock = std::chrono::steady_clock;

class HttpConnection;

// One request being answered. The application answers it once, with
// respond() or with begin_stream(), write()..., end_stream(); calls after the
// answer is complete or the client has gone do nothing.
class Exchange : public std::enable_shared_from_this<Exchange> {
public:
  Exchange(std::weak_ptr<HttpConnection> connection, boost::asio::any_io_executor io,
           HttpRequest request)
      : connection_(std::move(connection)), io_(std::move(io)), request_(std::move(request)) {}

  const HttpRequest &request() const { return request_; }
  HttpRequest &request() { return request_; }

  // I/O thread only.
  void respond(HttpResponse response);
  void begin_stream(HttpResponse head); // status, type and headers; the body follows
  void write(std::string piece);
  void end_stream();
  // True once the answer is complete or the client has gone.
  bool over() const { return over_; }
  // Called once, on the I/O thread, if the client goes away (or the server
  // closes the connection) before the answer is complete.
  void on_client_gone(std::function<void()> callback) { gone_ = std::move(callback); }
  // Keeps `state` alive as long as the exchange is.
  void hold(std::shared_ptr<void> state) { held_ = std::move(state); }

  // Any thread: runs `work` on the I/O thread.
  void post(std::function<void()> work) const;
  const boost::asio::any_io_executor &executor() const { return io_; }

  // Called by the connection.
  void finished();
  void client_gone();

private:
  std::weak_ptr<HttpConnection> connection_;
  boost::asio::any_io_executor io_;
  HttpRequest request_;
  bool over_ = false;
  std::function<void()> gone_;
  std::shared_ptr<void> held_;
};

class HttpApplication {
public:
  virtual ~HttpApplication() = default;
  virtual Screening screen(const RequestHead &head) = 0;
  virtual void serve(const std::shared_ptr<Exchange> &exchange) = 0;
  // True while the server is stopping: every answer closes its connection.
  virtual bool stopping() const = 0;
  // Every answer's status, those the connection gives itself included
  // (413, 431, 408, ...), for the metrics.
  virtual void answered(const std::string &path, int status) = 0;
};

// What every connection of a server shares; lives on the I/O thread.
struct ConnectionContext {
  HttpLimits limits;
  HttpApplication &application;
  ConnectionCounter &counter;
  std::shared_ptr<BodyBudget> budget;
  std::function<void(HttpConnection *)> on_closed; // the server forgets it
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
public:
  HttpConnection(boost::asio::ip::tcp::socket socket, std::string remote_address,
                 ConnectionContext &context);
  void start();
  // Closes the socket at once; a request in progress sees its client gone.
  void close();
  // Closes the connection unless a request is being answered.
  void close_if_idle();
  bool answering() const { return phase_ == Phase::serving; }

  // From Exchange.
  void send_answer(const Exchange &exchange, HttpResponse response, bool streamed);
  void send_piece(const Exchange &exchange, std::string piece);
  void end_stream(const Exchange &exchange);

private:
  enum class Phase { reading, serving, lingering, closed };

  void begin_request();
  void read_more();
  void on_read(boost::system::error_code error, size_t bytes);
  void parse_input();
  void dispatch();
  // Answers before the body is read (or after a broken one) and closes.
  void refuse(const HttpResponse &response);
  std::string head_bytes(const HttpResponse &response, bool streamed, bool close) const;
  // Counts the answer (metrics) and starts its log line's figures.
  void begin_answer(int status);
  void log_exchange(const char *ending) const;
  void queue(std::string bytes);
  void write_next();
  void on_written(boost::system::error_code error);
  void answer_written();
  void linger();
  void arm_read_deadline();
  void arm(HttpClock::time_point when);
  void disarm();
  void on_deadline();

  boost::asio::ip::tcp::socket socket_;
  const std::string remote_address_;
  ConnectionContext &context_;
  boost::asio::steady_timer deadline_;
  Phase phase_ = Phase::reading;
  bool first_request_ = true;

  boost::beast::flat_buffer input_;
  bool reading_ = false;
  size_t lingered_bytes_ = 0;           // dropped since an early answer went out
  std::optional<RequestReader> reader_; // the request being read
  HttpClock::time_point request_started_;
  HttpClock::time_point last_read_;
  std::string path_;   // of the request being answered, for the metrics and the log
  std::string method_; // likewise
  int status_ = 0;
  size_t answer_bytes_ = 0;
  std::vector<std::pair<std::string, std::string>> answer_headers_;

  std::shared_ptr<Exchange> exchange_;
  bool answer_started_ = false; // the head of the answer is queued
  bool chunked_ = false;        // the streamed answer is chunk-encoded
  bool close_after_answer_ = false;
  bool answer_complete_ = false;   // every byte of the answer is queued
  std::deque<std::string> output_; // front: being written
  bool writing_ = false;
};

} // namespace bonsai::server

#include "http/http_connection.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "base/server_log.hpp"
#include "http/error_response.hpp"

namespace bonsai::server {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

constexpr size_t kReadChunk = 16 * 1024;
// How long, and how much, a connection ended after an early answer keeps
// reading (and dropping) what the client still sends, so that closing with
// unread bytes does not reset the connection before the client has read the
// answer. Bounded in bytes too: a client sending a refused body at full
// speed would otherwise keep the I/O thread busy draining it.
constexpr auto kLinger = 1s;
constexpr size_t kLingerBytes = 256 * 1024;

} // namespace

void Exchange::respond(HttpResponse response) {
  if (auto connection = connection_.lock(); connection && !over_)
    connection->send_answer(*this, std::move(response), false);
}

void Exchange::begin_stream(HttpResponse head) {
  if (auto connection = connection_.lock(); connection && !over_)
    connection->send_answer(*this, std::move(head), true);
}

void Exchange::write(std::string piece) {
  if (auto connection = connection_.lock(); connection && !over_)
    connection->send_piece(*this, std::move(piece));
}

void Exchange::end_stream() {
  if (auto connection = connection_.lock(); connection && !over_)
    connection->end_stream(*this);
}

void Exchange::post(std::function<void()> work) const {
  asio::post(io_, std::move(work));
}

void Exchange::finished() {
  over_ = true;
  gone_ = nullptr;
}

void Exchange::client_gone() {
  if (over_)
    return;
  over_ = true;
  if (auto callback = std::move(gone_))
    callback();
}

HttpConnection::HttpConnection(asio::ip::tcp::socket socket, std::string remote_address,
                               ConnectionContext &context)
    : socket_(std::move(socket)), remote_address_(std::move(remote_address)), context_(context),
      deadline_(socket_.get_executor()),
      // Room for a whole head, and for a client sending ahead while its
      // answer is made; past that reading pauses.
      input_(context.limits.max_header_bytes + kReadChunk) {}

void HttpConnection::start() {
  begin_request();
  read_more();
}

void HttpConnection::begin_request() {
  phase_ = Phase::reading;
  reader_.emplace(
      context_.limits, *context_.budget,
      [this](const RequestHead &head) { return context_.application.screen(head); },
      remote_address_);
  path_.clear();
  method_.clear();
  status_ = 0;
  answer_headers_.clear();
  exchange_.reset();
  answer_started_ = false;
  chunked_ = false;
  close_after_answer_ = false;
  answer_complete_ = false;
  arm_read_deadline();
}

void HttpConnection::read_more() {
  if (reading_ || phase_ == Phase::closed)
    return;
  const size_t room = input_.max_size() - input_.size();
  if (room == 0)
    return; // a client this far ahead waits until its answer is written
  reading_ = true;
  socket_.async_read_some(
      input_.prepare(std::min(kReadChunk, room)),
      [self = shared_from_this()](error_code error, size_t bytes) { self->on_read(error, bytes); });
}

void HttpConnection::on_read(error_code error, size_t bytes) {
  reading_ = false;
  if (phase_ == Phase::closed)
    return;
  if (error) {
    // The end of the stream or a reset: nothing more will come, and a client
    // that half-closes is not waiting for an answer either.
    close();
    return;
  }
  input_.commit(bytes);
  last_read_ = HttpClock::now();
  switch (phase_) {
  case Phase::reading:
    if (!reader_->begun())
      request_started_ = last_read_;
    parse_input();
    return;
  case Phase::serving:
    read_more(); // pipelined bytes wait their turn; reading notices a disconnect
    return;
  case Phase::lingering:
    lingered_bytes_ += input_.size();
    input_.consume(input_.size());
    if (lingered_bytes_ > kLingerBytes) {
      close();
      return;
    }
    read_more();
    return;
  case Phase::closed:
    return;
  }
}

void HttpConnection::parse_input() {
  switch (reader_->feed(input_)) {
  case RequestReader::Progress::refused:
    answer_headers_ = reader_->answer_headers();
    path_ = reader_->path();
    method_ = reader_->method();
    refuse(reader_->refusal());
    return;
  case RequestReader::Progress::complete:
    dispatch();
    return;
  case RequestReader::Progress::need_more:
    break;
  }
  if (reader_->wants_continue())
    queue("HTTP/1.1 100 Continue\r\n\r\n");
  arm_read_deadline();
  read_more();
}

void HttpConnection::dispatch() {
  phase_ = Phase::serving;
  disarm();
  first_request_ = false;
  answer_headers_ = reader_->answer_headers();
  HttpRequest request = reader_->take();
  reader_.reset();
  path_ = request.path;
  method_ = std::string(request.message.method_string());
  close_after_answer_ = !request.message.keep_alive() || context_.application.stopping();
  chunked_ = request.message.version() >= 11;
  exchange_ =
      std::make_shared<Exchange>(weak_from_this(), socket_.get_executor(), std::move(request));
  const std::shared_ptr<Exchange> exchange = exchange_;
  context_.application.serve(exchange);
  read_more(); // watches for the client going away while it is answered
}

void HttpConnection::refuse(const HttpResponse &response) {
  if (phase_ != Phase::reading)
    return;
  phase_ = Phase::serving;
  close_after_answer_ = true; // the rest of the request stays unread
  answer_started_ = answer_complete_ = true;
  begin_answer(response.status);
  queue(head_bytes(response, false, true) + response.body);
  read_more();
}

std::string HttpConnection::head_bytes(const HttpResponse &response, bool streamed,
                                       bool close) const {
  std::string head = fmt::format(
      "HTTP/1.1 {} {}\r\n", response.status,
      std::string_view(http::obsolete_reason(static_cast<http::status>(response.status))));
  if (!response.content_type.empty())
    head += fmt::format("Content-Type: {}\r\n", response.content_type);
  if (!streamed) {
    if (response.status != 204) // a 204 has no body, not even a length
      head += fmt::format("Content-Length: {}\r\n", response.body.size());
  } else if (chunked_) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  head += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
  head += "X-Content-Type-Options: nosniff\r\n";
  for (const auto &[name, value] : answer_headers_)
    head += fmt::format("{}: {}\r\n", name, value);
  for (const auto &[name, value] : response.headers)
    head += fmt::format("{}: {}\r\n", name, value);
  head += "\r\n";
  return head;
}

void HttpConnection::send_answer(const Exchange &exchange, HttpResponse response, bool streamed) {
  if (&exchange != exchange_.get() || phase_ != Phase::serving || answer_started_)
    return;
  answer_started_ = true;
  begin_answer(response.status);
  close_after_answer_ = close_after_answer_ || response.close || context_.application.stopping();
  if (streamed && !chunked_)
    close_after_answer_ = true; // HTTP/1.0: the stream ends with the connection
  std::string bytes = head_bytes(response, streamed, close_after_answer_);
  if (!streamed) {
    bytes += response.body;
    answer_complete_ = true;
  }
  queue(std::move(bytes));
}

void HttpConnection::send_piece(const Exchange &exchange, std::string piece) {
  if (&exchange != exchange_.get() || !answer_started_ || answer_complete_ || piece.empty())
    return;
  queue(chunked_ ? fmt::format("{:x}\r\n{}\r\n", piece.size(), piece) : std::move(piece));
}

void HttpConnection::end_stream(const Exchange &exchange) {
  if (&exchange != exchange_.get() || !answer_started_ || answer_complete_)
    return;
  answer_complete_ = true;
  if (chunked_)
    queue("0\r\n\r\n");
  else if (output_.empty())
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ == Phase::serving && self->output_.empty() && !self->writing_)
        self->answer_written();
    });
}

void HttpConnection::begin_answer(int status) {
  status_ = status;
  answer_bytes_ = 0;
  context_.application.answered(path_, status);
}

void HttpConnection::log_exchange(const char *ending) const {
  // Probes and scrapes would drown the log: they show at debug.
  const bool routine = path_ == "/health" || path_ == "/metrics";
  log_at(routine ? LogLevel::debug : LogLevel::info, "{} {} {} -> {}, {} bytes in {} ms{}",
         remote_address_, method_.empty() ? "-" : method_, path_.empty() ? "-" : path_, status_,
         answer_bytes_,
         std::chrono::duration_cast<std::chrono::milliseconds>(HttpClock::now() - request_started_)
             .count(),
         ending);
}

void HttpConnection::queue(std::string bytes) {
  answer_bytes_ += bytes.size();
  // The front string may be in flight; later pieces are gathered into one.
  if (output_.size() >= 2)
    output_.back() += bytes;
  else
    output_.push_back(std::move(bytes));
  write_next();
}

void HttpConnection::write_next() {
  if (writing_ || output_.empty() || phase_ == Phase::closed)
    return;
  writing_ = true;
  arm(HttpClock::now() + context_.limits.write_timeout);
  asio::async_write(
      socket_, asio::buffer(output_.front()),
      [self = shared_from_this()](error_code error, size_t) { self->on_written(error); });
}

void HttpConnection::on_written(error_code error) {
  writing_ = false;
  if (phase_ == Phase::closed)
    return;
  if (error) {
    close();
    return;
  }
  output_.pop_front();
  if (!output_.empty()) {
    write_next();
    return;
  }
  if (phase_ == Phase::reading)
    arm_read_deadline(); // a 100 Continue went out; the body is due
  else if (answer_complete_)
    answer_written();
  else
    disarm(); // a stream waits for its next piece: no deadline meanwhile
}

void HttpConnection::answer_written() {
  log_exchange("");
  if (exchange_)
    exchange_->finished();
  exchange_.reset();
  answer_started_ = false;
  if (close_after_answer_) {
    linger();
    return;
  }
  begin_request();
  if (input_.size() > 0) {
    request_started_ = last_read_ = HttpClock::now();
    parse_input();
  } else {
    read_more();
  }
}

void HttpConnection::linger() {
  phase_ = Phase::lingering;
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  lingered_bytes_ = input_.size();
  input_.consume(input_.size());
  arm(HttpClock::now() + kLinger);
  read_more();
}

void HttpConnection::close() {
  if (phase_ == Phase::closed)
    return;
  phase_ = Phase::closed;
  deadline_.cancel();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (auto exchange = std::move(exchange_)) {
    log_exchange(answer_started_ ? ", cut off: the connection closed before the answer ended"
                                 : ", unanswered: the connection closed first");
    exchange->client_gone();
  }
  reader_.reset();
  output_.clear();
  context_.counter.release(remote_address_);
  context_.on_closed(this);
}

void HttpConnection::close_if_idle() {
  if ((phase_ == Phase::reading && !reader_->begun()) || phase_ == Phase::lingering)
    close();
}

void HttpConnection::arm_read_deadline() {
  const HttpLimits &limits = context_.limits;
  if (!reader_->begun())
    arm(HttpClock::now() + (first_request_ ? limits.read_timeout : limits.idle_timeout));
  else
    arm(std::min(request_started_ + limits.request_timeout, last_read_ + limits.read_timeout));
}

void HttpConnection::arm(HttpClock::time_point when) {
  deadline_.expires_at(when); // cancels the wait for the previous deadline
  deadline_.async_wait([self = shared_from_this()](error_code error) {
    if (!error)
      self->on_deadline();
  });
}

void HttpConnection::disarm() {
  deadline_.expires_at(HttpClock::time_point::max());
}

void HttpConnection::on_deadline() {
  // A wait that completed just before the deadline moved is stale.
  if (phase_ == Phase::closed || deadline_.expiry() > HttpClock::now())
    return;
  if (phase_ == Phase::reading && reader_->begun() && !writing_) {
    refuse(error_response(408, "invalid_request_error",
                          "The request did not arrive in time: a request must arrive within " +
                              std::to_string(context_.limits.request_timeout.count()) +
                              " s, with no silence longer than " +
                              std::to_string(context_.limits.read_timeout.count()) + " s",
                          reader_->path()));
    return;
  }
  close(); // idle, or a client that stopped reading its answer
}

} // namespace bonsai::server

#include "http/request_reader.hpp"

#include <algorithm>
#include <cctype>

#include "http/beast_http.hpp"
#include <fmt/format.h>

#include "http/error_response.hpp"
#include "http/header_text.hpp"

namespace bonsai::server {
namespace {

// The path of a request target: origin form "/a?b", absolute form
// "http://host/a?b" (what a proxy sends), or "*" for OPTIONS (the server as
// a whole, RFC 9112 3.2.4); nullopt for anything else.
std::optional<std::string> target_path(std::string_view target, http::verb method) {
  if (target == "*")
    return method == http::verb::options ? std::optional<std::string>("*") : std::nullopt;
  if (const size_t scheme = target.find("://");
      scheme != std::string_view::npos && !target.empty() && target.front() != '/') {
    const size_t slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  if (target.empty() || target.front() != '/')
    return std::nullopt;
  return std::string(target.substr(0, target.find('?')));
}

// `path`: the request's, once its head was read ("" before), for the shape
// of the error body.
HttpResponse parse_failure(const boost::system::error_code &error, const HttpLimits &limits,
                           const std::string &path) {
  if (error == http::error::header_limit)
    return error_response(431, "invalid_request_error",
                          fmt::format("The request line and headers are larger than {} bytes",
                                      limits.max_header_bytes),
                          path);
  if (error == http::error::body_limit)
    return error_response(
        413, "invalid_request_error",
        fmt::format("The request body is larger than {} bytes", limits.max_body_bytes), path);
  return error_response(400, "invalid_request_error", "Malformed HTTP request: " + error.message(),
                        path);
}

HttpResponse budget_spent(const std::string &path) {
  return error_response(503, "server_error",
                        "The server holds as many request bodies as it may; retry shortly", path)
      .header("Retry-After", "1");
}

} // namespace

RequestReader::RequestReader(const HttpLimits &limits, BodyBudget &budget, Screen screen,
                             std::string remote_address)
    : limits_(limits), budget_(budget), screen_(std::move(screen)),
      remote_address_(std::move(remote_address)) {
  parser_.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser_.body_limit(limits.max_body_bytes);
}

RequestReader::Progress RequestReader::feed(boost::beast::flat_buffer &input) {
  if (refusal_)
    return Progress::refused;
  begun_ = begun_ || input.size() > 0;
  while (!parser_.is_done() && input.size() > 0) {
    const bool in_head = !parser_.is_header_done();
    boost::system::error_code error;
    const size_t used = parser_.put(input.data(), error);
    input.consume(used);
    // Beast applies its header limit to what one put() sees and consumes the
    // head line by line, so across calls the head's total is counted here.
    if (in_head) {
      head_bytes_ += used;
      // What is left is all head only when Beast waits for more; otherwise
      // it may hold the body, and the next put() goes on with the head.
      const size_t unfinished = error == http::error::need_more ? input.size() : 0;
      if (head_bytes_ + unfinished > limits_.max_header_bytes)
        return refuse(parse_failure(http::error::header_limit, limits_, known_path()));
    }
    if (error == http::error::need_more)
      break;
    if (error)
      return refuse(parse_failure(error, limits_, known_path()));
    if (parser_.is_header_done() && !screened_ && !screen_head())
      return Progress::refused;
    // Beast adds a chunked body's trailer fields to the head it was given,
    // after the head was counted and screened: none are taken.
    if (screened_ && field_count() != head_fields_)
      return refuse(error_response(400, "invalid_request_error",
                                   "Trailer fields after a chunked body are not accepted", path_));
    if (!charge_body())
      return Progress::refused;
  }
  if (parser_.is_done())
    return Progress::complete;
  // A chunk line so long that the buffer fills before it ends.
  if (input.size() >= input.max_size())
    return refuse(error_response(400, "invalid_request_error",
                                 fmt::format("A line of the request body's framing is longer than "
                                             "{} bytes",
                                             input.max_size()),
                                 path_));
  return Progress::need_more;
}

std::string RequestReader::method() const {
  return parser_.is_header_done() ? std::string(parser_.get().method_string()) : std::string();
}

size_t RequestReader::field_count() const {
  const HttpMessage &message = parser_.get();
  return static_cast<size_t>(std::distance(message.begin(), message.end()));
}

RequestReader::Progress RequestReader::finish() {
  if (refusal_)
    return Progress::refused;
  if (!begun_) // Beast's put_eof wants a started message
    return refuse(error_response(400, "invalid_request_error",
                                 "The connection ended before a request began"));
  boost::system::error_code error;
  parser_.put_eof(error);
  if (!error && parser_.is_done())
    return Progress::complete;
  return refuse(error_response(400, "invalid_request_error",
                               "The connection ended in the middle of the request", path_));
}

bool RequestReader::wants_continue() {
  const bool due = continue_due_ && !parser_.is_done();
  continue_due_ = false;
  return due;
}

HttpRequest RequestReader::take() {
  HttpRequest request;
  request.message = parser_.release();
  request.path = std::move(path_);
  request.remote_address = remote_address_;
  request.body_reservation = std::shared_ptr<BodyBudget::Share>(std::move(body_share_));
  return request;
}

std::string RequestReader::known_path() const {
  if (!path_.empty())
    return path_;
  // Beast refuses a declared length past the limit as it completes the head,
  // before the head is screened; the request line is read by then.
  const HttpMessage &message = parser_.get();
  if (message.target().empty())
    return path_;
  return target_path(message.target(), message.method()).value_or("");
}

RequestReader::Progress RequestReader::refuse(HttpResponse response) {
  refusal_ = std::move(response);
  return Progress::refused;
}

bool RequestReader::screen_head() {
  screened_ = true;
  const HttpMessage &message = parser_.get();
  const auto refuse_with = [this](int status, const std::string &text) {
    refuse(error_response(status, "invalid_request_error", text, path_));
    return false;
  };
  std::optional<std::string> path = target_path(message.target(), message.method());
  if (!path)
    return refuse_with(400, "The request target is not a path or an absolute URL");
  path_ = std::move(*path);
  head_fields_ = field_count();
  if (head_fields_ > static_cast<size_t>(limits_.max_header_count))
    return refuse_with(
        431, fmt::format("The request has more than {} header fields", limits_.max_header_count));
  // Fields whose meaning is one value: a second copy could say something
  // other than the first one, which is the one checked.
  for (const http::field name : {http::field::host, http::field::origin, http::field::authorization,
                                 http::field::content_type, http::field::content_encoding,
                                 http::field::transfer_encoding, http::field::expect}) {
    if (message.count(name) > 1)
      return refuse_with(400, fmt::format("The request repeats its {} header",
                                          std::string_view(http::to_string(name))));
  }
  // Anthropic's clients send their key in x-api-key.
  if (message.count("x-api-key") > 1)
    return refuse_with(400, "The request repeats its x-api-key header");
  if (const auto coding = message.find(http::field::transfer_encoding); coding != message.end()) {
    // Both framings at once is how requests are smuggled past a proxy.
    if (message.find(http::field::content_length) != message.end())
      return refuse_with(400, "The request has both Content-Length and Transfer-Encoding");
    if (!ascii_iequals(trim_blanks(coding->value()), "chunked"))
      return refuse_with(501, "Only the chunked transfer coding is accepted");
  }
  if (const auto coding = message.find(http::field::content_encoding);
      coding != message.end() && !ascii_iequals(trim_blanks(coding->value()), "identity"))
    return refuse_with(415,
                       "Compressed request bodies are not accepted; send the body uncompressed");
  if (const auto expect = message.find(http::field::expect); expect != message.end()) {
    if (!ascii_iequals(trim_blanks(expect->value()), "100-continue"))
      return refuse_with(417, "Only 'Expect: 100-continue' is known");
    continue_due_ = true;
  }
  Screening screening = screen_({message, path_, remote_address_});
  answer_headers_ = std::move(screening.response_headers);
  if (screening.refusal) {
    refuse(std::move(*screening.refusal));
    return false;
  }
  if (const auto length = parser_.content_length(); length && *length > 0) {
    body_share_ = budget_.open_share();
    if (!body_share_->grow_to(*length)) {
      refuse(budget_spent(path_));
      return false;
    }
  }
  return true;
}

bool RequestReader::charge_body() {
  if (!parser_.is_header_done() || parser_.content_length())
    return true; // a declared length was charged with the head
  const size_t bytes = parser_.get().body().size();
  if (bytes == 0)
    return true;
  if (!body_share_)
    body_share_ = budget_.open_share();
  if (body_share_->grow_to(bytes))
    return true;
  refuse(budget_spent(path_));
  return false;
}

} // namespace bonsai::server

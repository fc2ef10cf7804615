#pragma once
// Reads one HTTP/1.1 request from bytes as they arrive, under every limit
// that can be checked without a clock: head bytes and fields, the framing
// (no Content-Length beside Transfer-Encoding, chunked only, no compressed
// bodies), the application's screening of the head before any body byte is
// taken, the body's size in every transfer form, and the body's share of the
// server-wide budget. No sockets here: HttpConnection feeds it, and so do the
// tests and the HTTP fuzz target.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/beast_http.hpp"

#include "http/connection_limits.hpp"
#include "http/http_message.hpp"

namespace bonsai::server {

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 32 * 1024;
  int32_t max_header_count = 100;
  std::chrono::seconds request_timeout{30}; // head and body, from their first byte
  std::chrono::seconds read_timeout{10};    // silence while a request is due
  std::chrono::seconds write_timeout{30};   // one write of an answer
  std::chrono::seconds idle_timeout{5};     // between requests on a kept-alive connection
};

// The request head as the application screens it, before any body byte is
// read.
struct RequestHead {
  const HttpMessage &message;
  const std::string &path;
  const std::string &remote_address;
};

struct Screening {
  std::optional<HttpResponse> refusal; // set: answer this and read no body
  // Headers every answer to this request carries (CORS).
  std::vector<std::pair<std::string, std::string>> response_headers;
};

using Screen = std::function<Screening(const RequestHead &)>;

class RequestReader {
public:
  RequestReader(const HttpLimits &limits, BodyBudget &budget, Screen screen,
                std::string remote_address);

  enum class Progress {
    need_more, // feed more bytes
    complete,  // take() the request
    refused,   // answer refusal() and read nothing more of this connection
  };
  // Parses what `input` holds, consuming the bytes it used; bytes past the
  // end of the request stay in `input` (the next, pipelined request).
  Progress feed(boost::beast::flat_buffer &input);
  // The end of the input: a request cut short is malformed (refused).
  Progress finish();

  // True once a byte of the request has been fed.
  bool begun() const { return begun_; }
  // Set once the head was read: the client waits for "100 Continue" (sent
  // once) before it sends the body.
  bool wants_continue();
  const HttpResponse &refusal() const { return *refusal_; }
  // Once the head is read (empty before): for the logs and the metrics.
  const std::string &path() const { return path_; }
  std::string method() const;
  // Headers for every answer to this request (CORS), once screened.
  const std::vector<std::pair<std::string, std::string>> &answer_headers() const {
    return answer_headers_;
  }
  HttpRequest take();

private:
  Progress refuse(HttpResponse response);
  // The request's path for the shape of an error body: once the head is
  // read, even before it was screened ("" before).
  std::string known_path() const;
  size_t field_count() const;
  bool screen_head();
  bool charge_body();

  const HttpLimits &limits_;
  BodyBudget &budget_;
  Screen screen_;
  const std::string remote_address_;
  http::request_parser<http::string_body> parser_;
  bool begun_ = false;
  size_t head_bytes_ = 0;  // of the head, consumed by the parser so far
  size_t head_fields_ = 0; // fields of the head when it was screened
  bool screened_ = false;
  bool continue_due_ = false;
  std::string path_;
  std::vector<std::pair<std::string, std::string>> answer_headers_;
  std::unique_ptr<BodyBudget::Share> body_share_;
  std::optional<HttpResponse> refusal_;
};

} // namespace bonsai::server

#pragma once
// What the HTTP layer hands to the routes and takes back: a request whose
// head and body were read within every limit, and an answer.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/beast_http.hpp"

namespace bonsai::server {

namespace http = boost::beast::http;

using HttpMessage = http::request<http::string_body>;

struct HttpRequest {
  HttpMessage message; // head and (once read) body
  std::string path;    // the target without its query
  std::string remote_address;
  // The body's share of the bytes the server lets requests hold at once,
  // given back when the request is dropped.
  std::shared_ptr<void> body_reservation;

  std::string_view header(http::field name) const {
    const auto it = message.find(name);
    return it == message.end() ? std::string_view() : std::string_view(it->value());
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers; // extra ones
  bool close = false;                                       // end the connection after this answer

  HttpResponse() = default;
  HttpResponse(int status, std::string body, std::string content_type = "application/json")
      : status(status), content_type(std::move(content_type)), body(std::move(body)) {}
  HttpResponse &header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

} // namespace bonsai::server

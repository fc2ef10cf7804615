#pragma once
// Shared fixtures for the server tests: an in-process bonsai::server::Server
// on a free loopback port with the tiny golden model on the CPU plugin's
// exact reference kernels, an HTTP client (cpp-httplib's), a raw-socket
// client for requests no well-behaved client sends, and SSE parsing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "bonsai/engine.hpp"
#include "bonsai/server.hpp"

namespace server_test {

using json = nlohmann::json;

inline std::string data_path(const std::string &name) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
}

inline bonsai::EngineOptions engine_options(int32_t n_ctx = 512) {
  bonsai::EngineOptions options;
  options.backend = std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cpu.so";
  options.n_ctx = n_ctx;
  options.n_batch = 64;
  options.n_threads = 2;
  // Exact kernels: a sequence's logits do not depend on what shares its step.
  options.plugin_options = "kernels=reference";
  return options;
}

inline bonsai::Engine open_tiny(int32_t n_ctx = 512) {
  return bonsai::Engine::open(data_path("tiny-q1.gguf"), engine_options(n_ctx));
}

// A golden model's prompt and the float64 reference's greedy continuation
// (tests/data/NAME.ref.greedy.json).
struct Golden {
  std::vector<int32_t> prompt, greedy;
};
inline Golden load_golden(const std::string &model = "tiny-q1") {
  std::ifstream in(data_path(model + ".ref.greedy.json"));
  const json doc = json::parse(in);
  return {doc["prompt"].get<std::vector<int32_t>>(), doc["greedy"].get<std::vector<int32_t>>()};
}

inline bonsai::server::ServerOptions server_options(int32_t parallel = 2) {
  bonsai::server::ServerOptions options;
  options.port = 0;
  options.parallel = parallel;
  options.max_queue = 64;
  options.prefill_chunk = 16;
  return options;
}

// A started server whose model has loaded.
struct RunningServer {
  std::unique_ptr<bonsai::server::Server> server;
  // `model`: a file of tests/data, tiny-q1.gguf unless named. `exact`: the
  // CPU plugin's reference kernels; false for its fast ones (ten times the
  // speed under ASan) where a test needs no exact logits.
  explicit RunningServer(bonsai::server::ServerOptions options = server_options(),
                         int32_t n_ctx = 512, std::string model = "tiny-q1.gguf", bool exact = true)
      : server(std::make_unique<bonsai::server::Server>(std::move(options), [n_ctx, model, exact] {
          bonsai::EngineOptions engine = engine_options(n_ctx);
          if (!exact)
            engine.plugin_options.clear();
          return bonsai::Engine::open(data_path(model), engine);
        })) {
    server->wait_loaded();
    EXPECT_TRUE(server->ready()) << server->load_error();
  }
  int port() const { return server->port(); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port());
    c.set_read_timeout(180, 0); // a queued request waits for those ahead of it
    return c;
  }
};

inline json parse(const std::string &body) {
  return json::parse(body);
}

// POSTs a JSON body to the server on `port` (status -1 when the request
// failed).
inline httplib::Response post_json(int port, const std::string &path, const json &body,
                                   int read_timeout_s = 120) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(read_timeout_s, 0);
  auto result = client.Post(path.c_str(), body.dump(), "application/json");
  if (!result) {
    httplib::Response failed;
    failed.status = -1;
    return failed;
  }
  return result.value();
}

// POSTs `body` and returns the response (status -1 when the request failed).
inline httplib::Response post(const RunningServer &server, const std::string &path,
                              const std::string &body, const httplib::Headers &headers = {}) {
  httplib::Client client = server.client();
  auto result = client.Post(path.c_str(), headers, body, "application/json");
  if (!result) {
    httplib::Response failed;
    failed.status = -1;
    return failed;
  }
  return result.value();
}

// The `data:` payloads of a server-sent event stream, in order.
inline std::vector<std::string> sse_data(const std::string &stream) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < stream.size()) {
    size_t end = stream.find("\n\n", at);
    if (end == std::string::npos)
      end = stream.size();
    const std::string event = stream.substr(at, end - at);
    if (event.rfind("data: ", 0) == 0)
      out.push_back(event.substr(6));
    at = end + 2;
  }
  return out;
}

struct Streamed {
  int status = -1;
  std::string content_type;
  std::vector<std::string> events; // data payloads
};

// POSTs a streaming request and collects its events; `stop_after` > 0 closes
// the connection after that many bytes (a client that goes away).
// `stop`, when given, closes the connection once it is set.
inline Streamed post_stream(const RunningServer &server, const std::string &path,
                            const std::string &body, size_t stop_after = 0,
                            const std::atomic<bool> *stop = nullptr) {
  httplib::Client client = server.client();
  std::string raw;
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body;
  request.set_header("Content-Type", "application/json");
  request.content_receiver = [&](const char *data, size_t size, uint64_t, uint64_t) {
    raw.append(data, size);
    if (stop != nullptr && stop->load())
      return false;
    return stop_after == 0 || raw.size() < stop_after;
  };
  Streamed out;
  auto result = client.send(request);
  if (result) {
    out.status = result->status;
    out.content_type = result->get_header_value("Content-Type");
  }
  out.events = sse_data(raw);
  return out;
}

// Sends raw bytes on a new connection, optionally half-closing, and returns
// everything the server sent back until it closed or `wait` passed.
inline std::string raw_exchange(int port, const std::string &bytes, bool close_write = false,
                                std::chrono::milliseconds wait = std::chrono::seconds(10)) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
    close(fd);
    return {};
  }
  timeval timeout{static_cast<time_t>(wait.count() / 1000),
                  static_cast<suseconds_t>((wait.count() % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += static_cast<size_t>(n);
  }
  if (close_write)
    shutdown(fd, SHUT_WR);
  std::string reply;
  char buffer[4096];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0)
      break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

// A raw TCP connection to the server, for requests no well-behaved client
// sends and for watching exactly what the server answers and when it closes.
class RawConnection {
public:
  // `source`: the local address to connect from (127.0.0.2 and up are
  // loopback addresses too), so that tests can be several clients.
  explicit RawConnection(int port, const char *source = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, source, &local.sin_addr);
      if (bind(fd_, reinterpret_cast<sockaddr *>(&local), sizeof local) != 0) {
        close_fd();
        return;
      }
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0)
      close_fd();
  }
  ~RawConnection() { close_fd(); }
  RawConnection(const RawConnection &) = delete;
  RawConnection &operator=(const RawConnection &) = delete;
  RawConnection(RawConnection &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

  bool connected() const { return fd_ >= 0; }
  // False once the server has closed or reset the connection.
  bool send_all(std::string_view bytes) {
    size_t sent = 0;
    while (fd_ >= 0 && sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      sent += static_cast<size_t>(n);
    }
    return fd_ >= 0;
  }
  // Whatever arrives within `wait`, or until the server closes; `closed`
  // tells which.
  std::string read_for(std::chrono::milliseconds wait, bool *closed = nullptr) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    bool ended = false;
    while (fd_ >= 0) {
      // At least one look, however short the wait.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0)
        break;
      char buffer[8192];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        ended = true;
        break;
      }
      out.append(buffer, static_cast<size_t>(n));
    }
    if (closed != nullptr)
      *closed = ended;
    return out;
  }
  // Reads until the server closes (or `wait` passes); true when it closed.
  bool closes_within(std::chrono::milliseconds wait, std::string *received = nullptr) {
    bool closed = false;
    const std::string bytes = read_for(wait, &closed);
    if (received != nullptr)
      *received += bytes;
    return closed;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

private:
  void close_fd() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers; // lower-case names
  std::string body;
  std::string header(const std::string &name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// The whole responses at the front of `bytes` (heads with Content-Length,
// or chunked bodies), in order; a cut-off one ends the list.
inline std::vector<RawResponse> parse_responses(std::string_view bytes) {
  std::vector<RawResponse> out;
  while (!bytes.empty()) {
    const size_t head_end = bytes.find("\r\n\r\n");
    if (head_end == std::string_view::npos || bytes.substr(0, 9) != "HTTP/1.1 ")
      break;
    RawResponse response;
    response.status = std::atoi(std::string(bytes.substr(9, 3)).c_str());
    size_t line = bytes.find("\r\n") + 2;
    while (line < head_end) {
      const size_t end = bytes.find("\r\n", line);
      const std::string_view field = bytes.substr(line, end - line);
      const size_t colon = field.find(':');
      std::string name(field.substr(0, colon));
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      std::string_view value = field.substr(colon + 1);
      while (!value.empty() && value.front() == ' ')
        value.remove_prefix(1);
      response.headers[name] = std::string(value);
      line = end + 2;
    }
    bytes.remove_prefix(head_end + 4);
    if (response.status == 100) { // an interim answer: no body
      out.push_back(std::move(response));
      continue;
    }
    if (response.headers.count("transfer-encoding") != 0) {
      for (;;) {
        const size_t size_end = bytes.find("\r\n");
        if (size_end == std::string_view::npos)
          return out;
        const size_t size = std::stoul(std::string(bytes.substr(0, size_end)), nullptr, 16);
        if (bytes.size() < size_end + 2 + size + 2)
          return out;
        response.body.append(bytes.substr(size_end + 2, size));
        bytes.remove_prefix(size_end + 2 + size + 2);
        if (size == 0)
          break;
      }
    } else {
      const std::string declared = response.header("content-length");
      const size_t length = declared.empty() ? 0 : std::stoul(declared); // 204: none
      if (bytes.size() < length)
        break;
      response.body = std::string(bytes.substr(0, length));
      bytes.remove_prefix(length);
    }
    out.push_back(std::move(response));
  }
  return out;
}

// One request on a new connection; the first whole response, if one came.
inline std::optional<RawResponse>
raw_request(int port, const std::string &request,
            std::chrono::milliseconds wait = std::chrono::seconds(10),
            const char *source = nullptr) {
  RawConnection connection(port, source);
  if (!connection.send_all(request))
    return std::nullopt;
  std::string bytes;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    bool closed = false;
    bytes += connection.read_for(std::chrono::milliseconds(50), &closed);
    std::vector<RawResponse> responses = parse_responses(bytes);
    if (!responses.empty())
      return std::move(responses.front());
    if (closed)
      break;
  }
  return std::nullopt;
}

// "GET path" with a Host header naming the loopback address and port.
inline std::string get_request(int port, const std::string &path,
                               const std::string &extra_headers = {}) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" +
         extra_headers + "\r\n";
}

inline std::string post_request(int port, const std::string &path, const std::string &body,
                                const std::string &extra_headers = {},
                                const std::string &content_type = "application/json") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" +
         body;
}

// The value of a metric line "name value" in a /metrics page (-1 if absent).
inline double metric(const std::string &page, const std::string &name) {
  const std::string key = "\n" + name + " ";
  const size_t at = page.find(key);
  if (at == std::string::npos)
    return -1;
  return std::stod(page.substr(at + key.size()));
}

inline std::string metrics_page(const RunningServer &server) {
  httplib::Client client = server.client();
  auto result = client.Get("/metrics");
  return result ? result->body : std::string();
}

// Polls until `done` or the deadline; returns done's last answer.
template <class Done> bool eventually(Done &&done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

} // namespace server_test

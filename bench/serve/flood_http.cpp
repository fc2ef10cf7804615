#include "flood_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace flood {
namespace {

using Clock = std::chrono::steady_clock;

class Socket {
public:
  Socket() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0)
      close(fd_);
  }
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  int fd() const { return fd_; }

private:
  int fd_;
};

// Waits until `fd` is ready for `events`; false when the deadline passes.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return false;
    pollfd entry{fd, events, 0};
    const int ready = poll(&entry, 1, static_cast<int>(left));
    if (ready > 0)
      return true;
    if (ready < 0 && errno != EINTR)
      return false;
  }
}

std::string connect_to(int fd, int port, Clock::time_point deadline) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0 &&
      errno != EINPROGRESS)
    return std::string("connect: ") + strerror(errno);
  if (!wait_for(fd, POLLOUT, deadline))
    return "connect timed out";
  int error = 0;
  socklen_t size = sizeof(error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
  return error == 0 ? "" : std::string("connect: ") + strerror(error);
}

std::string send_all(int fd, const std::string &bytes, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (errno != EAGAIN && errno != EINTR) {
      return std::string("send: ") + strerror(errno);
    } else if (!wait_for(fd, POLLOUT, deadline)) {
      return "send timed out";
    }
  }
  return "";
}

// The size of the whole answer once its head has arrived and names a
// Content-Length; 0 until then (the answer then ends with the connection).
size_t expected_size(const std::string &raw) {
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos)
    return 0;
  std::string head = raw.substr(0, head_end);
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const size_t field = head.find("\r\ncontent-length:");
  if (field == std::string::npos)
    return 0;
  return head_end + 4 + std::strtoull(head.c_str() + field + 17, nullptr, 10);
}

std::string read_answer(int fd, Clock::time_point deadline, std::string &raw) {
  char buffer[16384];
  for (;;) {
    const size_t expected = expected_size(raw);
    if (expected != 0 && raw.size() >= expected)
      return "";
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      raw.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      return raw.empty() ? "closed without an answer" : "";
    } else if (errno != EAGAIN && errno != EINTR) {
      return std::string("recv: ") + strerror(errno);
    } else if (!wait_for(fd, POLLIN, deadline)) {
      return "answer timed out";
    }
  }
}

void parse_answer(const std::string &raw, HttpResult &result) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) {
    result.error = "not an HTTP answer";
    return;
  }
  result.status = std::atoi(raw.c_str() + 9);
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end != std::string::npos)
    result.body = raw.substr(head_end + 4);
}

} // namespace

HttpResult http_request(int port, const std::string &method, const std::string &path,
                        const std::string &json_body, double timeout_s) {
  HttpResult result;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n";
  if (!json_body.empty())
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(json_body.size()) +
        "\r\n";
  request += "\r\n" + json_body;
  Socket socket;
  std::string raw;
  result.error = connect_to(socket.fd(), port, deadline);
  if (result.error.empty())
    result.error = send_all(socket.fd(), request, deadline);
  if (result.error.empty())
    result.error = read_answer(socket.fd(), deadline, raw);
  if (result.error.empty())
    parse_answer(raw, result);
  result.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

} // namespace flood

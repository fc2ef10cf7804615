#include "connection_probe.hpp"

#include "server_log.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace bonsai::server {
namespace {

// The numeric address and port of `address`, or port -1 for other families.
std::pair<std::string, int> address_of(const sockaddr_storage &address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto &v4 = reinterpret_cast<const sockaddr_in &>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    return {text, ntohs(v4.sin_port)};
  }
  if (address.ss_family == AF_INET6) {
    const auto &v6 = reinterpret_cast<const sockaddr_in6 &>(address);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    return {text, ntohs(v6.sin6_port)};
  }
  return {{}, -1};
}

bool is_connection(int fd, const std::string &remote_addr, int remote_port, int local_port) {
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof local, peer_size = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_size) != 0 ||
      address_of(local).second != local_port)
    return false;
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peer_size) != 0)
    return false;
  const auto [address, port] = address_of(peer);
  return port == remote_port && address == remote_addr;
}

} // namespace

ConnectionProbe::ConnectionProbe(const std::string &remote_addr, int remote_port, int local_port) {
  std::error_code error; // error codes throughout: a probe never throws
  std::filesystem::directory_iterator entry("/proc/self/fd", error), end;
  for (; !error && entry != end; entry.increment(error)) {
    const int fd = std::atoi(entry->path().filename().c_str());
    if (fd > 2 && is_connection(fd, remote_addr, remote_port, local_port)) {
      fd_ = fd;
      return;
    }
  }
  log_at(LogLevel::debug, "no socket found for the connection from {}:{} to port {}", remote_addr,
         remote_port, local_port);
}

bool ConnectionProbe::closed() const {
  if (fd_ < 0)
    return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0)
    return false;
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0)
    return true;
  // Readable: either the client sent more (a pipelined request) or the
  // connection ended; only the second reads as 0 bytes.
  char byte = 0;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

} // namespace bonsai::server

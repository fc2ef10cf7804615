#include "connection_probe.hpp"

#include "server_log.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
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

// The inode of the socket at `fd` ("socket:[N]" in /proc), or 0.
uint64_t socket_inode(int fd) {
  char link[64] = {};
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t size = readlink(path.c_str(), link, sizeof link - 1);
  if (size <= 0)
    return 0;
  unsigned long long inode = 0;
  return std::sscanf(link, "socket:[%llu]", &inode) == 1 ? inode : 0;
}

} // namespace

ConnectionProbe::ConnectionProbe(const std::string &remote_addr, int remote_port, int local_port) {
  // Several sockets can match: on loopback Linux reuses a client port still
  // in TIME_WAIT, while the server may not yet have closed the old
  // connection from that port. Sockets get increasing inode numbers, so the
  // newest match is this request's connection.
  std::error_code error; // error codes throughout: a probe never throws
  std::filesystem::directory_iterator entry("/proc/self/fd", error), end;
  for (; !error && entry != end; entry.increment(error)) {
    const int fd = std::atoi(entry->path().filename().c_str());
    if (fd <= 2 || !is_connection(fd, remote_addr, remote_port, local_port))
      continue;
    const uint64_t inode = socket_inode(fd);
    if (inode != 0 && inode > inode_) {
      fd_ = fd;
      inode_ = inode;
    }
  }
  if (fd_ >= 0)
    return;
  log_at(LogLevel::debug, "no socket found for the connection from {}:{} to port {}", remote_addr,
         remote_port, local_port);
}

bool ConnectionProbe::closed() const {
  // Our connection stays open while its request is handled; should the
  // number hold another socket, say nothing rather than guess.
  if (fd_ < 0 || socket_inode(fd_) != inode_)
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

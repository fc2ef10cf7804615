#include "listen_backlog.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace bonsai::server {
namespace {

bool is_listener_on(int fd, int port) {
  int listening = 0;
  socklen_t size = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening == 0)
    return false;
  sockaddr_storage local{};
  socklen_t local_size = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_size) != 0)
    return false;
  if (local.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in &>(local).sin_port) == port;
  if (local.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6 &>(local).sin6_port) == port;
  return false;
}

} // namespace

bool widen_listen_backlog(int port) {
  bool found = false;
  std::error_code error; // never throws: the default backlog still works
  std::filesystem::directory_iterator entry("/proc/self/fd", error), end;
  for (; !error && entry != end; entry.increment(error)) {
    const int fd = std::atoi(entry->path().filename().c_str());
    if (fd > 2 && is_listener_on(fd, port) && listen(fd, SOMAXCONN) == 0)
      found = true;
  }
  return found;
}

} // namespace bonsai::server

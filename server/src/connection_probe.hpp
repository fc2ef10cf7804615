#pragma once
// Tells whether the client of the request being handled has gone away, so
// that its generation is cancelled at once, also while nothing is written to
// it (a long prompt, a non-streamed reply). cpp-httplib does not hand the
// socket to handlers, so the probe finds it once among the process's open
// descriptors by the connection's two addresses, then polls it.
#include <cstdint>
#include <string>

namespace bonsai::server {

class ConnectionProbe {
public:
  ConnectionProbe(const std::string &remote_addr, int remote_port, int local_port);
  // True once the peer has closed or reset the connection. A probe that could
  // not find its socket always says false (writes still notice the loss).
  bool closed() const;

private:
  int fd_ = -1;
  uint64_t inode_ = 0; // the socket's inode: tells it from a later socket at the same fd
};

} // namespace bonsai::server

#pragma once
// cpp-httplib 0.11 (Debian's compiled library) listens with a backlog of 5
// and has no setting for it: a burst of clients connecting at once overflows
// the accept queue, and on loopback the handshakes it drops can leave a
// client's request late enough for the server to close the connection as
// idle. Linux lets listen() be called again on a listening socket to change
// its backlog; this does that for the server's socket.
namespace bonsai::server {

// Raises the backlog of this process's listening socket on `port` to
// SOMAXCONN. Returns false when no such socket was found (nothing changes).
bool widen_listen_backlog(int port);

} // namespace bonsai::server

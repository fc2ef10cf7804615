#pragma once
// How many connections wait in the server's accept queue: connected as far
// as the clients can tell, but not yet accepted by the server. A deep queue
// delays every new connection, a /health probe's among them.
#include <optional>

namespace flood {

// The accept queue of the socket listening on 127.0.0.1:`port`, from
// /proc/net/tcp; nullopt when no such socket is listed.
std::optional<int> accept_queue_length(int port);

} // namespace flood

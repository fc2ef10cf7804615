#pragma once
// What each kind of flood connection sends: its first bytes, its pace, and
// the bytes that follow. The letters are those of --kinds.
#include <cstdint>
#include <string>

namespace flood {

enum class Kind {
  slowloris,    // a: a request line, then one header byte per second, never ending
  slow_body,    // b: a valid completion head with Content-Length 900000, then 1 byte/s
  oversized,    // c: Content-Length 100 MB, sent as fast as the server reads
  chunked,      // d: a chunked body that never ends, full speed
  gzip,         // e: Content-Encoding: gzip, a deflated body that inflates to 64 MiB
  many_headers, // f: thousands of short header lines, full speed
  long_header,  // f: one header line that never ends, full speed
  idle,         // g: connects and sends nothing
};
constexpr int kKindCount = 8;

enum class Pace {
  none,    // everything goes with the first bytes
  trickle, // one byte per second
  full,    // as fast as the server reads
};

// The kind of flood slot `slot` for the --kinds letters: dealt round robin,
// every other 'f' slot an endless header line instead of many short ones.
Kind kind_of_slot(const std::string &letters, int slot);
const char *kind_name(Kind kind);
Pace pace_of(Kind kind);

// The bytes a connection sends as soon as it is open.
std::string opening_bytes(Kind kind, int port);
// Appends what follows after `sent` bytes past the opening: one byte for a
// trickle, a block at full speed. False, appending nothing, when the kind
// has nothing more to send.
bool next_bytes(Kind kind, uint64_t sent, std::string &out);

} // namespace flood

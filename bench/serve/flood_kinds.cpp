#include "flood_kinds.hpp"

#include <zlib.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace flood {
namespace {

constexpr size_t kBlock = 64 * 1024; // what a full-speed connection appends at a time
constexpr uint64_t kSlowBodyLength = 900000;
constexpr uint64_t kOversizedLength = 100000000;
constexpr size_t kBombInflated = 64 << 20;

const std::string &filler() {
  static const std::string bytes(kBlock, 'a');
  return bytes;
}

// 64 MiB of zeros as one gzip member (about 64 KiB): a server that inflated
// bodies would hold 64 times its body limit.
std::string make_gzip_bomb() {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::vector<unsigned char> zeros(1 << 20, 0), out(1 << 20);
  std::string bomb;
  for (size_t fed = 0; fed < kBombInflated; fed += zeros.size()) {
    const bool last = fed + zeros.size() >= kBombInflated;
    stream.next_in = zeros.data();
    stream.avail_in = static_cast<uInt>(zeros.size());
    do {
      stream.next_out = out.data();
      stream.avail_out = static_cast<uInt>(out.size());
      deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
      bomb.append(reinterpret_cast<const char *>(out.data()), out.size() - stream.avail_out);
    } while (stream.avail_out == 0);
  }
  deflateEnd(&stream);
  return bomb;
}

// A block of short header lines ("X-h: 1"), 8 bytes each.
const std::string &header_lines() {
  static const std::string lines = [] {
    std::string text;
    for (size_t line = 0; line < kBlock / 8; ++line)
      text += "X-h: 1\r\n";
    return text;
  }();
  return lines;
}

const std::string &gzip_bomb() {
  static const std::string bomb = make_gzip_bomb();
  return bomb;
}

std::string post_head(int port, const std::string &framing) {
  return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\n" + framing + "\r\n";
}

std::string get_head_start(int port) {
  return "GET /health HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n";
}

// Appends up to one block of `source` from `offset`; false past its end.
bool append_from(const std::string &source, uint64_t offset, std::string &out) {
  if (offset >= source.size())
    return false;
  out.append(source, offset, kBlock);
  return true;
}

} // namespace

Kind kind_of_slot(const std::string &letters, int slot) {
  const size_t count = letters.size();
  const char letter = letters[static_cast<size_t>(slot) % count];
  const bool odd_round = (static_cast<size_t>(slot) / count) % 2 == 1;
  switch (letter) {
  case 'a':
    return Kind::slowloris;
  case 'b':
    return Kind::slow_body;
  case 'c':
    return Kind::oversized;
  case 'd':
    return Kind::chunked;
  case 'e':
    return Kind::gzip;
  case 'f':
    return odd_round ? Kind::long_header : Kind::many_headers;
  default:
    return Kind::idle;
  }
}

const char *kind_name(Kind kind) {
  switch (kind) {
  case Kind::slowloris:
    return "a slowloris head, 1 B/s";
  case Kind::slow_body:
    return "b slow body, 1 B/s";
  case Kind::oversized:
    return "c Content-Length 100 MB";
  case Kind::chunked:
    return "d endless chunked body";
  case Kind::gzip:
    return "e gzip body";
  case Kind::many_headers:
    return "f many header lines";
  case Kind::long_header:
    return "f endless header line";
  case Kind::idle:
    return "g silent";
  }
  return "?";
}

Pace pace_of(Kind kind) {
  switch (kind) {
  case Kind::slowloris:
  case Kind::slow_body:
    return Pace::trickle;
  case Kind::idle:
    return Pace::none;
  default:
    return Pace::full;
  }
}

std::string opening_bytes(Kind kind, int port) {
  switch (kind) {
  case Kind::slowloris:
    return get_head_start(port);
  case Kind::slow_body:
    return post_head(port, "Content-Length: " + std::to_string(kSlowBodyLength) + "\r\n");
  case Kind::oversized:
    return post_head(port, "Content-Length: " + std::to_string(kOversizedLength) + "\r\n");
  case Kind::chunked:
    return post_head(port, "Transfer-Encoding: chunked\r\n");
  case Kind::gzip:
    return post_head(port, "Content-Encoding: gzip\r\nContent-Length: " +
                               std::to_string(gzip_bomb().size()) + "\r\n");
  case Kind::many_headers:
  case Kind::long_header:
    return get_head_start(port) + (kind == Kind::long_header ? "X-Long: " : "");
  case Kind::idle:
    return "";
  }
  return "";
}

bool next_bytes(Kind kind, uint64_t sent, std::string &out) {
  static const std::string slow_header = "X-Slow: ", slow_body = "{\"prompt\": \"";
  static const std::string chunk = "10000\r\n" + filler() + "\r\n"; // 0x10000 = kBlock
  switch (kind) {
  case Kind::slowloris:
    out += sent < slow_header.size() ? slow_header[sent] : 'a';
    return true;
  case Kind::slow_body:
    if (sent >= kSlowBodyLength)
      return false;
    out += sent < slow_body.size() ? slow_body[sent] : 'a';
    return true;
  case Kind::oversized:
    if (sent >= kOversizedLength)
      return false;
    out.append(filler(), 0,
               static_cast<size_t>(std::min<uint64_t>(kBlock, kOversizedLength - sent)));
    return true;
  case Kind::chunked:
    out += chunk;
    return true;
  case Kind::gzip:
    return append_from(gzip_bomb(), sent, out);
  case Kind::many_headers:
    out += header_lines();
    return true;
  case Kind::long_header:
    out += filler();
    return true;
  case Kind::idle:
    return false;
  }
  return false;
}

} // namespace flood

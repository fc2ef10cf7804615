#include "flood_connections.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace flood {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Flood::Connection {
  enum class State { closed, connecting, open };
  int slot = 0;
  Kind kind = Kind::idle;
  State state = State::closed;
  int fd = -1;
  Clock::time_point due;       // closed: when to open; open and trickling: the next byte
  Clock::time_point opened_at; // the last connect() attempt
  std::string out;             // bytes to send, from out_at
  size_t out_at = 0;
  uint64_t generated = 0; // bytes made by next_bytes since the opening
  bool exhausted = false; // the kind has nothing more to send
  std::string answer;     // the first bytes of the server's answer, until a status is read
  bool answered = false;
};

namespace {

// A slot that was just dropped is opened again no sooner than this after its
// last open, so that a server refusing at once cannot make the tool spin.
constexpr auto kReopenGap = 100ms;
constexpr auto kRetryAfterFailure = 250ms;
constexpr auto kConnectTimeout = 5s;
constexpr auto kSamplePeriod = 100ms;
// At most this many bytes per socket and wake-up, so that no socket starves the others.
constexpr size_t kWriteBurst = 1 << 20;

bool connect_from(int fd, int source_host, int port) {
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl((127u << 24) | static_cast<uint32_t>(source_host));
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr *>(&source), sizeof(source)) != 0)
    return false;
  return connect(fd, reinterpret_cast<sockaddr *>(&target), sizeof(target)) == 0 ||
         errno == EINPROGRESS;
}

int socket_error(int fd) {
  int error = 0;
  socklen_t size = sizeof(error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
  return error;
}

} // namespace

Flood::Flood(FloodConfig config) : config_(std::move(config)) {
  slots_.resize(static_cast<size_t>(config_.connections));
  for (int i = 0; i < config_.connections; ++i) {
    Connection &c = slots_[static_cast<size_t>(i)];
    c.slot = i;
    c.kind = kind_of_slot(config_.kinds, i);
    ++stats_.kinds[static_cast<size_t>(c.kind)].slots;
    opening_bytes(c.kind, config_.port); // makes the gzip body now, not in the loop
  }
}

Flood::~Flood() {
  stop();
}

void Flood::start() {
  thread_ = std::thread([this] { run(); });
}

void Flood::stop() {
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
}

void Flood::run() {
  std::vector<pollfd> polled;
  std::vector<Connection *> owners;
  auto next_sample = Clock::now();
  while (!stopping_) {
    auto now = Clock::now();
    if (now >= next_sample) {
      sample();
      next_sample = now + kSamplePeriod;
    }
    auto wake = next_sample;
    polled.clear();
    owners.clear();
    for (Connection &c : slots_) {
      tend(c, now, wake);
      if (c.fd < 0)
        continue;
      const bool sending = c.state == Connection::State::connecting || c.out_at < c.out.size();
      polled.push_back({c.fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0});
      owners.push_back(&c);
    }
    // Rounded up: a wait rounded down to 0 ms would spin until the deadline.
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
    if (poll(polled.data(), polled.size(), static_cast<int>(std::clamp<long>(wait, 0, 100))) <= 0)
      continue;
    now = Clock::now();
    for (size_t i = 0; i < polled.size(); ++i)
      if (polled[i].revents != 0)
        handle(*owners[i], polled[i].revents, now);
  }
  for (Connection &c : slots_)
    if (c.fd >= 0)
      close(c.fd);
}

// Opens a closed slot that is due, and gives an open one its next bytes.
void Flood::tend(Connection &c, Clock::time_point now, Clock::time_point &wake) {
  if (c.state == Connection::State::closed) {
    if (now >= c.due)
      open(c, now);
    else
      wake = std::min(wake, c.due);
    return;
  }
  if (c.state == Connection::State::connecting && now - c.opened_at > kConnectTimeout) {
    failed(c, now);
    return;
  }
  if (c.state != Connection::State::open || c.exhausted || c.out_at < c.out.size())
    return;
  const Pace pace = pace_of(c.kind);
  if (pace == Pace::trickle && now < c.due) {
    wake = std::min(wake, c.due);
    return;
  }
  if (pace == Pace::none)
    return;
  c.out.clear();
  c.out_at = 0;
  c.exhausted = !next_bytes(c.kind, c.generated, c.out);
  c.generated += c.out.size();
  if (pace == Pace::trickle) {
    c.due = std::max(c.due + 1s, now);
    wake = std::min(wake, c.due);
  }
}

void Flood::handle(Connection &c, short events, Clock::time_point now) {
  if (c.state == Connection::State::connecting) {
    if (socket_error(c.fd) != 0)
      failed(c, now);
    else if (events & POLLOUT)
      established(c, now);
    return;
  }
  if (events & (POLLIN | POLLHUP | POLLERR))
    read_from(c, now);
  if (c.state == Connection::State::open && (events & POLLOUT))
    write_to(c, now);
}

void Flood::open(Connection &c, Clock::time_point now) {
  c.opened_at = now;
  c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int source_host = 2 + c.slot / config_.per_address;
  if (c.fd >= 0 && connect_from(c.fd, source_host, config_.port)) {
    c.state = Connection::State::connecting;
    return;
  }
  failed(c, now);
}

void Flood::failed(Connection &c, Clock::time_point now) {
  ++tally(c).connect_failures;
  if (c.fd >= 0)
    close(c.fd);
  c.fd = -1;
  c.state = Connection::State::closed;
  c.due = now + kRetryAfterFailure;
}

void Flood::established(Connection &c, Clock::time_point now) {
  ++tally(c).opens;
  c.state = Connection::State::open;
  c.out = opening_bytes(c.kind, config_.port);
  c.out_at = 0;
  c.generated = 0;
  c.exhausted = false;
  c.answer.clear();
  c.answered = false;
  if (pace_of(c.kind) == Pace::trickle) {
    // Single bytes go out at once; slots are spread over the second so that
    // the trickles do not all wake the server together.
    const int on = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    c.due = now + 500ms + std::chrono::milliseconds((c.slot * 97) % 1000);
  }
  write_to(c, now);
}

void Flood::lost(Connection &c, Clock::time_point now) {
  ++tally(c).dropped;
  close(c.fd);
  c.fd = -1;
  c.state = Connection::State::closed;
  c.out.clear();
  c.out_at = 0;
  c.due = std::max(now, c.opened_at + kReopenGap);
}

void Flood::read_from(Connection &c, Clock::time_point now) {
  char buffer[16384];
  for (;;) {
    const ssize_t n = recv(c.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (n <= 0) {
      lost(c, now);
      return;
    }
    if (c.answered)
      continue; // the rest of an answer whose status is counted
    c.answer.append(buffer, std::min<size_t>(static_cast<size_t>(n), 16));
    if (c.answer.size() >= 12 && c.answer.rfind("HTTP/1.", 0) == 0) {
      ++tally(c).answers[std::atoi(c.answer.c_str() + 9)];
      c.answered = true;
    }
  }
}

void Flood::write_to(Connection &c, Clock::time_point now) {
  size_t burst = 0;
  while (burst < kWriteBurst) {
    if (c.out_at == c.out.size()) {
      // Full-speed kinds refill here; a trickle waits for its next second.
      if (pace_of(c.kind) != Pace::full || c.exhausted)
        return;
      c.out.clear();
      c.out_at = 0;
      c.exhausted = !next_bytes(c.kind, c.generated, c.out);
      c.generated += c.out.size();
      if (c.out.empty())
        return;
    }
    const ssize_t n =
        send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (n <= 0) {
      lost(c, now);
      return;
    }
    c.out_at += static_cast<size_t>(n);
    burst += static_cast<size_t>(n);
    if (!frozen_)
      stats_.bytes_sent += static_cast<uint64_t>(n);
  }
}

KindTally &Flood::tally(const Connection &c) {
  return frozen_ ? scratch_ : stats_.kinds[static_cast<size_t>(c.kind)];
}

void Flood::sample() {
  if (!counting_)
    return;
  stats_.held.push_back(
      static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Connection &c) {
        return c.state == Connection::State::open;
      })));
}

} // namespace flood

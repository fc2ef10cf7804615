#include "interrupt.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "bonsai/core/error.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

// Shared with the signal handler: lock-free atomics and a plain fd only.
std::atomic<bool> g_armed{false};
std::atomic<int> g_presses{0}; // Ctrl-C presses since arm()
std::atomic<int> g_wake_write_fd{-1};
constexpr char kWakeCancel = 'c';
constexpr char kWakeQuit = 'q';

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

void exit_now() {
  // Leave the cursor on a fresh line; the shell prints its prompt next.
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, "\n", 1);
  _exit(kExitInterrupted);
}

extern "C" void on_sigint(int) {
  const int saved_errno = errno;
  if (!g_armed.load() || g_presses.fetch_add(1) >= 1)
    exit_now();
  const char wake = kWakeCancel;
  [[maybe_unused]] ssize_t n = write(g_wake_write_fd.load(), &wake, 1);
  errno = saved_errno;
}

} // namespace

InterruptHandler::InterruptHandler(Session &session) : session_(session) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw Error("cannot create the Ctrl-C pipe");
  // The handler must never block on a full pipe.
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  wake_read_fd_ = fds[0];
  g_wake_write_fd.store(fds[1]);
  g_armed.store(false);
  g_presses.store(0);
  watcher_ = std::thread([this] { watch(); });

  struct sigaction action = {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART; // interrupted reads (chat input) just resume
  sigaction(SIGINT, &action, nullptr);
}

InterruptHandler::~InterruptHandler() {
  signal(SIGINT, SIG_DFL);
  const char quit = kWakeQuit;
  const int write_fd = g_wake_write_fd.exchange(-1);
  [[maybe_unused]] ssize_t n = write(write_fd, &quit, 1);
  watcher_.join();
  close(write_fd);
  close(wake_read_fd_);
}

void InterruptHandler::arm() {
  g_presses.store(0);
  g_armed.store(true);
}

void InterruptHandler::disarm() {
  g_armed.store(false);
}

bool InterruptHandler::interrupted() const {
  return g_presses.load() > 0;
}

void InterruptHandler::watch() {
  for (;;) {
    char wake = 0;
    const ssize_t n = read(wake_read_fd_, &wake, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || wake == kWakeQuit)
      return;
    session_.cancel();
  }
}

} // namespace bonsai::cli

#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

extern char **environ;

namespace bonsai::test {
namespace {

[[noreturn]] void fail(const std::string &what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::vector<char *> make_argv(const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const auto &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Waits for the child to exit until `deadline`, then kills it.
void reap(pid_t pid, Clock::time_point deadline, ProcessResult &result) {
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR)
      fail("waitpid");
    if (Clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.term_signal = WTERMSIG(status);
}

// Appends what is readable on `fd`; closes it and sets it to -1 at EOF (EIO
// is how a pty master reports that the other side has gone).
void drain(int &fd, std::string &into) {
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(fd);
    fd = -1;
  }
}

} // namespace

PipedChild::PipedChild(const ProcessSpec &spec) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    fail("pipe2");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // The child starts with default signal handling even if the test runner
  // ignores SIGINT, so the Ctrl-C test sees the program's own handler.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  auto argv = make_argv(spec.args);
  const int rc = posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (rc != 0) {
    close(in[1]);
    errno = rc;
    fail("posix_spawn " + spec.args.at(0));
  }
  // Small inputs only (the tests send a few lines): a pipe holds 64 KiB, so
  // this write cannot block on a child that has not started reading.
  if (!spec.stdin_data.empty() && spec.stdin_data.size() < 60000) {
    signal(SIGPIPE, SIG_IGN); // a child that exits early must not kill the test
    [[maybe_unused]] auto n = write(in[1], spec.stdin_data.data(), spec.stdin_data.size());
  }
  close(in[1]);
}

PipedChild::~PipedChild() {
  if (out_fd_ >= 0)
    close(out_fd_);
  if (err_fd_ >= 0)
    close(err_fd_);
  if (pid_ > 0) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
}

bool PipedChild::pump(Clock::time_point deadline, bool until_eof) {
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, remaining_ms(deadline));
    if (n < 0 && errno != EINTR)
      fail("poll");
    if (n == 0)
      return false;
    if (fds[0].revents)
      drain(out_fd_, result_.out);
    if (fds[1].revents)
      drain(err_fd_, result_.err);
    if (!until_eof)
      return true;
  }
  return true;
}

bool PipedChild::read_until(
    const std::function<bool(const std::string &, const std::string &)> &ready,
    milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!ready(result_.out, result_.err)) {
    if (out_fd_ < 0 && err_fd_ < 0)
      return false;
    if (!pump(deadline, false))
      return false;
  }
  return true;
}

void PipedChild::send_signal(int signal) {
  kill(pid_, signal);
}

ProcessResult PipedChild::finish(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  pump(deadline, true);
  reap(pid_, deadline, result_);
  pid_ = -1;
  return result_;
}

ProcessResult run_process(const ProcessSpec &spec) {
  PipedChild child(spec);
  return child.finish(spec.timeout);
}

PtyChild::PtyChild(const std::vector<std::string> &args) {
  auto argv = make_argv(args);
  winsize size{};
  size.ws_row = 40;
  size.ws_col = 120;
  pid_ = forkpty(&master_fd_, nullptr, nullptr, &size);
  if (pid_ < 0)
    fail("forkpty");
  if (pid_ == 0) {
    signal(SIGINT, SIG_DFL);
    execv(argv[0], argv.data());
    _exit(127);
  }
  fcntl(master_fd_, F_SETFD, FD_CLOEXEC);
}

PtyChild::~PtyChild() {
  if (master_fd_ >= 0)
    close(master_fd_);
  if (pid_ > 0) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
}

void PtyChild::type(const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(master_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR)
      fail("write to pty");
    if (n > 0)
      done += static_cast<size_t>(n);
  }
}

std::string PtyChild::read_until_idle_suffix(const std::string &suffix, milliseconds timeout,
                                             milliseconds quiet) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const bool at_suffix =
        pending_.size() >= suffix.size() &&
        pending_.compare(pending_.size() - suffix.size(), suffix.size(), suffix) == 0;
    const auto wait_until = at_suffix ? std::min(deadline, Clock::now() + quiet) : deadline;
    pollfd fd{master_fd_, POLLIN, 0};
    const int n = poll(&fd, 1, remaining_ms(wait_until));
    if (n < 0 && errno != EINTR)
      fail("poll");
    if (n == 0) {
      if (at_suffix)
        return std::exchange(pending_, std::string());
      throw std::runtime_error("timed out waiting for '" + suffix + "'; screen so far:\n" +
                               pending_);
    }
    if (n > 0) {
      drain(master_fd_, pending_);
      if (master_fd_ < 0)
        throw std::runtime_error("program ended while waiting for '" + suffix +
                                 "'; screen so far:\n" + pending_);
    }
  }
}

bool PtyChild::wait_for_output(size_t bytes, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (pending_.size() < bytes) {
    pollfd fd{master_fd_, POLLIN, 0};
    const int n = poll(&fd, 1, remaining_ms(deadline));
    if (n < 0 && errno != EINTR)
      fail("poll");
    if (n == 0)
      return false;
    if (n > 0) {
      drain(master_fd_, pending_);
      if (master_fd_ < 0)
        return false;
    }
  }
  return true;
}

ProcessResult PtyChild::finish(milliseconds timeout) {
  ProcessResult result;
  const auto deadline = Clock::now() + timeout;
  result.out = std::exchange(pending_, std::string());
  while (master_fd_ >= 0) {
    pollfd fd{master_fd_, POLLIN, 0};
    const int n = poll(&fd, 1, remaining_ms(deadline));
    if (n == 0)
      break;
    if (n > 0)
      drain(master_fd_, result.out);
  }
  reap(pid_, deadline, result);
  pid_ = -1;
  return result;
}

} // namespace bonsai::test
